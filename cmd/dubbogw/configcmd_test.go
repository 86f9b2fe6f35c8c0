package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
)

// configNode is a unique node path on the test ZooKeeper; its root is
// deleted, with everything under it, when the test ends (through a
// session with creds, when the nodes were made with them).
func configNode(t *testing.T, addr string, creds ...string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	root := "/dubbogw-cli-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
		if err != nil {
			return
		}
		defer conn.Close()
		for _, c := range creds {
			_ = conn.AddAuth("digest", []byte(c))
		}
		var del func(string)
		del = func(p string) {
			children, _, _ := conn.Children(p)
			for _, c := range children {
				del(p + "/" + c)
			}
			_ = conn.Delete(p, -1)
		}
		del(root)
	})
	return root + "/gw/config"
}

// cliConfig is a whole configuration routing /x to the upstream url.
func cliConfig(url string) string {
	return fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s}
upstreams:
  u: {targets: [{url: %q}]}
routes:
  - {name: x, match: {prefix: /x}, upstream: u}
`, url)
}

// TestConfigCommands: push validates first and writes with a
// compare-and-set (a stale --if-version is refused, exit 3, naming both
// versions; --force overrides), get prints the live configuration, diff
// shows the change (exit 1) or none (exit 0), history lists the
// versions, rollback pushes one back.
func TestConfigCommands(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	path := configNode(t, addr)
	zkFlags := []string{"--zookeeper", addr, "--path", path}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(append([]string{"config", args[0]}, zkFlags...), args[1:]...)...)
	}
	v0 := writeConfig(t, cliConfig("http://127.0.0.1:1"))
	v1 := writeConfig(t, cliConfig("http://127.0.0.1:2"))
	bad := writeConfig(t, strings.Replace(cliConfig("http://127.0.0.1:1"), "upstream: u}", "upstream: nope}", 1))

	if code, _, errOut := cli("push", bad); code != 1 || !strings.Contains(errOut, "routes[0].upstream") || !strings.Contains(errOut, "nothing written") {
		t.Fatalf("push of an invalid file: %d %q", code, errOut)
	}
	if code, _, errOut := cli("get"); code != 1 || !strings.Contains(errOut, "no configuration") {
		t.Fatalf("get after a refused push: %d %q", code, errOut)
	}
	if code, out, errOut := cli("push", v0); code != 0 || !strings.Contains(out, "version 0 written") {
		t.Fatalf("push: %d %q %q", code, out, errOut)
	}
	want0, _ := os.ReadFile(v0)
	if code, out, errOut := cli("get"); code != 0 || out != string(want0) || !strings.Contains(errOut, "version 0,") {
		t.Fatalf("get: %d %q %q", code, out, errOut)
	}
	// The URL form names the path itself.
	if code, out, _ := runCLI(t, "config", "get", "--zookeeper", "zookeeper://"+addr+path); code != 0 || out != string(want0) {
		t.Fatalf("get with a URL: %d %q", code, out)
	}
	if code, out, _ := cli("diff", v0); code != 0 || out != "" {
		t.Fatalf("diff of the same file: %d %q", code, out)
	}
	code, out, _ := cli("diff", v1)
	if code != 1 || !strings.Contains(out, "(version 0)") || !strings.Contains(out, `-  u: {targets: [{url: "http://127.0.0.1:1"}]}`) ||
		!strings.Contains(out, `+  u: {targets: [{url: "http://127.0.0.1:2"}]}`) {
		t.Fatalf("diff: %d\n%s", code, out)
	}
	// Two operators both read version 0: the first push wins, the
	// second is refused with both versions named, and writes nothing.
	if code, _, errOut := cli("push", "--if-version", "0", v1); code != 0 {
		t.Fatalf("first push: %d %q", code, errOut)
	}
	code, _, errOut := cli("push", "--if-version", "0", v0)
	if code != exitConflict || !strings.Contains(errOut, "expected version 0, found version 1") {
		t.Fatalf("second push: %d %q", code, errOut)
	}
	want1, _ := os.ReadFile(v1)
	if _, out, _ := cli("get"); out != string(want1) {
		t.Fatalf("the refused push wrote: %q", out)
	}
	if code, out, errOut := cli("push", "--if-version", "0", "--force", v0); code != 0 || !strings.Contains(out, "version 2 written") {
		t.Fatalf("forced push: %d %q %q", code, out, errOut)
	}
	code, out, _ = cli("history")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "VERSION") || !strings.HasPrefix(lines[1], "0 ") ||
		!strings.HasPrefix(lines[3], "2 ") || !strings.HasSuffix(lines[3], "live") || strings.HasSuffix(lines[2], "live") {
		t.Fatalf("history: %d\n%s", code, out)
	}
	if code, out, errOut := cli("rollback", "1"); code != 0 || !strings.Contains(out, "version 3 written") {
		t.Fatalf("rollback: %d %q %q", code, out, errOut)
	}
	if _, out, _ := cli("get"); out != string(want1) {
		t.Fatalf("after rollback 1: %q", out)
	}
	if code, _, errOut := cli("rollback", "99"); code != 1 || !strings.Contains(errOut, "no version 99") {
		t.Fatalf("rollback to a version not kept: %d %q", code, errOut)
	}
	// A rollback is a push: a stale --if-version is a conflict.
	if code, _, errOut := cli("rollback", "--if-version", "2", "0"); code != exitConflict || !strings.Contains(errOut, "found version 3") {
		t.Fatalf("stale rollback: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "config", "get", "--zookeeper", addr); code != 2 || !strings.Contains(errOut, "path") {
		t.Errorf("get without a path: %d %q", code, errOut)
	}
}

// TestConfigHelp: every config command's --help exits 0 with its usage
// and flags; the README's synopsis names every flag.
func TestConfigHelp(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, synopsis, _ := strings.Cut(string(readme), "## Command line")
	synopsis, _, _ = strings.Cut(synopsis, "\n```\n\n")
	common := []string{"zookeeper", "path", "timeout"}
	writes := append(common, "if-version", "force", "keep")
	for cmd, names := range map[string][]string{"get": common, "push": writes, "diff": common, "history": common, "rollback": writes} {
		for _, help := range []string{"--help", "-h"} {
			code, out, errOut := runCLI(t, "config", cmd, help)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: dubbogw config "+cmd) {
				t.Errorf("config %s %s: exit %d, stdout %q, stderr %q", cmd, help, code, out, errOut)
				continue
			}
			for _, f := range names {
				if !strings.Contains(out, "\n  -"+f+" ") && !strings.Contains(out, "\n  -"+f+"\n") {
					t.Errorf("config %s %s does not list -%s:\n%s", cmd, help, f, out)
				}
			}
		}
		if !strings.Contains(synopsis, "dubbogw config "+cmd) {
			t.Errorf("the README's synopsis lacks config %s", cmd)
		}
		for _, f := range names {
			if !strings.Contains(synopsis, "--"+f) {
				t.Errorf("the README's synopsis lacks config %s --%s", cmd, f)
			}
		}
	}
	if code, out, _ := runCLI(t, "config", "--help"); code != 0 || !strings.Contains(out, "rollback VERSION") {
		t.Errorf("config --help: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "config", "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("config frobnicate: %d %q", code, errOut)
	}
	for _, f := range []string{"config-cache", "config-timeout"} {
		if code, out, _ := runCLI(t, "run", "--help"); code != 0 || !strings.Contains(out, "\n  -"+f+" ") {
			t.Errorf("run --help lacks -%s", f)
		}
		if !strings.Contains(synopsis, "--"+f) {
			t.Errorf("the README's synopsis lacks run --%s", f)
		}
	}
}

// TestRunFromZooKeeper: the binary runs from a node written with digest
// credentials (${ZK_PW} in the URL, from the environment), follows a
// push, and never shows the password: not in its log, not in
// /admin/config. Nodes made with credentials are the user's alone.
// validate reads a node too.
func TestRunFromZooKeeper(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	const password = "pw-6d1f-secret"
	path := configNode(t, addr, "ops:"+password)
	url := "zookeeper://ops:${ZK_PW}@" + addr + path
	env := []string{"ZK_PW=" + password}
	answer := func(name string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, name) }))
		t.Cleanup(s.Close)
		return s.URL
	}
	a, b := answer("a"), answer("b")
	push := func(file string) {
		t.Helper()
		cmd := []string{"config", "push", "--zookeeper", url, file}
		if code, out, errOut := runCLIEnv(t, env, cmd...); code != 0 {
			t.Fatalf("push: %d %q %q", code, out, errOut)
		}
	}
	push(writeConfig(t, cliConfig(a)))
	if code, _, errOut := runCLI(t, "config", "get", "--zookeeper", addr, "--path", path); code != 1 || !strings.Contains(errOut, "not authenticated") {
		t.Errorf("get without the credentials: %d %q", code, errOut)
	}
	if code, out, errOut := runCLIEnv(t, env, "validate", "--config", url); code != 0 || !strings.Contains(out, "ok (1 routes") ||
		strings.Contains(out+errOut, password) {
		t.Errorf("validate: %d %q %q", code, out, errOut)
	}

	cache := t.TempDir() + "/cache.yaml"
	p := startBinary(t, env, "run", "--config", url, "--config-cache", cache)
	admin, data := p.addrOf(t, "admin"), p.addrOf(t, "data")
	waitReady(t, admin)
	body := func(url string) string {
		r, err := http.Get(url)
		if err != nil {
			return err.Error()
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	if got := body("http://" + data + "/x"); got != "a" {
		t.Fatalf("served %q, want a", got)
	}
	push(writeConfig(t, cliConfig(b)))
	testenv.WaitFor(t, 30*time.Second, "the push to serve", func() bool { return body("http://"+data+"/x") == "b" })
	shown := body("http://" + admin + "/admin/config")
	if strings.Contains(shown, password) || !strings.Contains(shown, `"location":"zookeeper://REDACTED@`) {
		t.Errorf("/admin/config: %s", shown)
	}
	// Written once the reload swapped the table: just after b serves.
	testenv.WaitFor(t, 30*time.Second, "the cache to hold b", func() bool {
		cached, _ := os.ReadFile(cache)
		return strings.Contains(string(cached), b)
	})
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, p); err != nil {
		t.Errorf("exit: %v", err)
	}
	if strings.Contains(p.log(), password) {
		t.Errorf("the log shows the password:\n%s", p.log())
	}
	if !p.logged("configuration from ZooKeeper applied") {
		t.Errorf("no propagation logged:\n%s", p.log())
	}
}

func runCLIEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("ZK_PW", strings.TrimPrefix(env[0], "ZK_PW="))
	return runCLI(t, args...)
}
