//go:build !linux

package main

import (
	"os/exec"
	"syscall"
)

// detach puts the child in a process group of its own, so stopping it also
// stops what it forked.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
