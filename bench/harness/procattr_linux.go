package main

import (
	"os/exec"
	"syscall"
)

// detach puts the child in a process group of its own (so stopping it
// also stops what it forked, as nginx's workers) and has the kernel kill
// it if the harness dies first.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
