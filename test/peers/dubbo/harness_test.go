package dubbo_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// harness is node-dubbo/peer.js: a dubbo-remoting consumer connected to one
// provider, answering one JSON line per request line (see peer.js).
type harness struct {
	stdin   io.WriteCloser
	answers chan []byte
	stderr  *syncBuffer
}

// call is one call for the harness; Args are values as dubbo-remoting takes
// them (js-to-java form).
type call struct {
	Service   string            `json:"service"`
	Version   string            `json:"version,omitempty"`
	Group     string            `json:"group,omitempty"`
	Method    string            `json:"method"`
	Args      []any             `json:"args"`
	Props     map[string]string `json:"props,omitempty"`
	TimeoutMs int               `json:"timeoutMs,omitempty"`
}

// result is what dubbo-remoting decoded from the response.
type result struct {
	OK      bool            `json:"ok"`
	Status  int             `json:"status"`
	Value   json.RawMessage `json:"value"`
	Props   map[string]any  `json:"props"`
	Error   json.RawMessage `json:"error"`
	Timeout bool            `json:"timeout"`
}

// requireRuntime skips the test when node or the harness's node_modules are
// missing, except under CI, where a broken install must fail rather than
// pass by skipping.
func requireRuntime(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: %v (CI is set, so a missing peer runtime is a failure, not a skip; scripts/test.sh installs it)", what, err)
	}
	t.Skipf("%s: %v (./scripts/test.sh installs it; set CI to make this a failure)", what, err)
}

// startHarness runs peer.js against the provider at addr; the test's
// cleanup stops it.
func startHarness(t *testing.T, addr string) *harness {
	t.Helper()
	node, err := exec.LookPath("node")
	requireRuntime(t, "node", err)
	dir, err := filepath.Abs(filepath.Join("..", "node-dubbo"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(dir, "node_modules", "dubbo-remoting", "package.json"))
	requireRuntime(t, "dubbo-remoting in test/peers/node-dubbo/node_modules", err)

	h := &harness{answers: make(chan []byte, 16), stderr: &syncBuffer{}}
	cmd := exec.Command(node, "peer.js", addr)
	cmd.Dir = dir
	cmd.Stderr = h.stderr
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the node harness: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				h.answers <- line
			}
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		close(h.answers)
		close(exited)
	}()
	t.Cleanup(func() {
		h.stdin.Close() // the harness exits when its stdin closes
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if s := h.stderr.String(); t.Failed() && s != "" {
			t.Logf("node harness stderr:\n%s", s)
		}
	})
	return h
}

// send writes one request line.
func (h *harness) send(t *testing.T, req any) {
	t.Helper()
	line, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("writing to the node harness: %v", err)
	}
}

// receive reads the next answer into v.
func (h *harness) receive(t *testing.T, v any) {
	t.Helper()
	select {
	case line, ok := <-h.answers:
		if !ok {
			t.Fatalf("the node harness exited; stderr:\n%s", h.stderr.String())
		}
		var failure struct {
			Fatal string `json:"fatal"`
		}
		if json.Unmarshal(line, &failure) == nil && failure.Fatal != "" {
			t.Fatalf("the node harness failed: %s", failure.Fatal)
		}
		if err := json.Unmarshal(line, v); err != nil {
			t.Fatalf("the node harness answered %s: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer from the node harness in 30s; stderr:\n%s", h.stderr.String())
	}
}

// do sends one request and reads its answer into v.
func (h *harness) do(t *testing.T, req, v any) {
	t.Helper()
	h.send(t, req)
	h.receive(t, v)
}

func (h *harness) call(t *testing.T, c call) result {
	t.Helper()
	var r result
	h.do(t, map[string]any{"op": "call", "call": c}, &r)
	return r
}

// syncBuffer collects a process's stderr.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
