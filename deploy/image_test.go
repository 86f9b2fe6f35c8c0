package deploy

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testcert"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// buildStatic builds the binary as the image does (scripts/image.sh,
// Dockerfile) into dir.
func buildStatic(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "dubbogw")
	cmd := exec.Command("go", "build", "-ldflags", "-s -w", "-o", bin, "../cmd/dubbogw")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestStaticBinary: the image's binary has no program interpreter and no
// shared library: it runs FROM scratch.
func TestStaticBinary(t *testing.T) {
	bin := buildStatic(t, t.TempDir())
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v", libs)
	}
}

// TestRunsWithNothingButItsFiles runs the static binary as the image does
// (uid 65532, not root) in a root directory holding only the binary, its
// configuration, TLS certificate and key, and a CA bundle: it starts,
// serves HTTP, HTTPS and HTTP→Dubbo (in-process demo provider) and the
// probes, writes nothing there, and drains on SIGTERM. Changing root and
// user needs root; elsewhere the test skips.
func TestRunsWithNothingButItsFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot and a uid change need root")
	}
	const uid = 65532
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	buildStatic(t, root) // root/dubbogw
	ca := testcert.NewCA(t, "image test CA")
	leaf := ca.Server(t, time.Time{}, "127.0.0.1")
	write := func(rel string, data []byte, mode os.FileMode) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/ssl/certs/ca-certificates.crt", ca.PEM, 0o644)
	write("etc/dubbogw/tls/tls.crt", leaf.CertPEM, 0o644)
	write("etc/dubbogw/tls/tls.key", leaf.KeyPEM, 0o600)
	if err := os.Chown(filepath.Join(root, "etc/dubbogw/tls/tls.key"), uid, uid); err != nil {
		t.Fatal(err)
	}
	data, admin, tlsAddr, demoHTTP, demoDubbo := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	write("etc/dubbogw/config/config.yaml", []byte(fmt.Sprintf(`
listen: %q
admin: {listen: %q}
access_log: {enabled: true, output: stdout}
shutdown: {delay: 0s, drain_timeout: 5s}
tls:
  listen: %q
  certificates: [{cert_file: /etc/dubbogw/tls/tls.crt, key_file: /etc/dubbogw/tls/tls.key}]
demo: {http: %q, dubbo: %q}
registries:
  demo: {type: static, providers: {com.example.demo.UserService: [%q]}}
upstreams:
  demo-http: {targets: [{url: "http://%s"}]}
routes:
  - {name: user, match: {methods: [GET], path: "/api/users/{id}"},
     dubbo: {registry: demo, interface: com.example.demo.UserService, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}}
  - {name: http, match: {prefix: /users}, upstream: demo-http}
`, data, admin, tlsAddr, demoHTTP, demoDubbo, demoDubbo, demoHTTP)), 0o644)
	before := tree(t, root)

	var out bytes.Buffer
	cmd := exec.Command("/dubbogw", "run", "--config", "/etc/dubbogw/config/config.yaml")
	cmd.Dir = "/"
	cmd.Env = []string{} // nothing from the environment either
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	client := &http.Client{Timeout: 5 * time.Second}
	testenv.WaitFor(t, 20*time.Second, "/readyz 200", func() bool {
		r, err := client.Get("http://" + admin + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 200
	})
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil || !strings.Contains(string(status), fmt.Sprintf("\nUid:\t%d\t%d", uid, uid)) {
		t.Errorf("the process does not run as uid %d (%v)", uid, err)
	}
	get := func(c *http.Client, url string) (int, string) {
		r, err := c.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			return 0, ""
		}
		defer r.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		return r.StatusCode, b.String()
	}
	if code, body := get(client, "http://"+data+"/api/users/42"); code != 200 || !strings.Contains(body, `"id":"42"`) {
		t.Errorf("HTTP→Dubbo: %d %q", code, body)
	}
	if code, _ := get(client, "http://"+data+"/users/7"); code != 200 {
		t.Errorf("HTTP→HTTP: %d", code)
	}
	tlsClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientConfig()}}
	if code, _ := get(tlsClient, "https://"+tlsAddr+"/api/users/1"); code != 200 {
		t.Errorf("HTTPS: %d", code)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", out.String())
	}
	if after := tree(t, root); after != before {
		t.Errorf("the gateway wrote into its root file system:\nbefore %s\nafter  %s", before, after)
	}
}

// tree lists the files under root with their sizes.
func tree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s:%d ", strings.TrimPrefix(p, root), info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestImageBuilds builds the image with scripts/image.sh (podman here;
// scripts/test.sh installs it) and checks what it runs as and what it
// runs; then runs it where this machine lets containers run. Building
// needs root here (rootless podman has no user namespaces in this VM).
func TestImageBuilds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("podman needs root on this machine")
	}
	podman := testenv.Tool(t, "podman")
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skipf("no CA bundle to put in the image: %v", err)
	}
	tag := fmt.Sprintf("localhost/dubbogw-test:%d", time.Now().UnixNano())
	if out, err := exec.Command("../scripts/image.sh", tag).CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })
	out, err := exec.Command(podman, "image", "inspect", tag, "--format", "{{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}").Output()
	if want := `65532:65532 ["/dubbogw"] ["run","--config","/etc/dubbogw/config/config.yaml"]`; err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("image config %q (%v), want %q", out, err, want)
	}
	// The image holds the binary and the CA bundle, nothing else.
	ctr, err := exec.Command(podman, "create", tag).Output()
	if err != nil {
		t.Fatalf("podman create: %v", err)
	}
	id := strings.TrimSpace(string(ctr))
	t.Cleanup(func() { _ = exec.Command(podman, "rm", "-f", id).Run() })
	mount, err := exec.Command(podman, "mount", id).Output()
	if err != nil {
		t.Fatalf("podman mount: %v", err)
	}
	defer exec.Command(podman, "unmount", id).Run()
	files := tree(t, strings.TrimSpace(string(mount)))
	for _, want := range []string{"/dubbogw:", "/etc/ssl/certs/ca-certificates.crt:"} {
		if !strings.Contains(files, want) {
			t.Errorf("the image lacks %s: %s", strings.TrimSuffix(want, ":"), files)
		}
	}
	if strings.Contains(files, "/bin") || strings.Contains(files, "/sh") {
		t.Errorf("the image has more than it needs: %s", files)
	}
	// Running it: this Firecracker VM refuses crun's setrlimit
	// (RLIMIT_NOFILE, "Operation not permitted"), so containers cannot run
	// here; where they can, the image must print its version.
	run, err := exec.Command(podman, "run", "--rm", "--network", "none", tag, "version").CombinedOutput()
	switch {
	case err == nil && !strings.HasPrefix(string(run), "dubbogw "):
		t.Errorf("podman run: %q", run)
	case err != nil && strings.Contains(string(run), "setrlimit"):
		t.Logf("containers cannot run on this machine (%s); the binary's run is TestRunsWithNothingButItsFiles", strings.TrimSpace(string(run)))
	case err != nil:
		t.Errorf("podman run: %v\n%s", err, run)
	}
}
