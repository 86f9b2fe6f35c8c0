package peers_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/test/peers"
)

// process is a foreign Hessian implementation answering one batch of
// requests per run (README.md, "Protocol").
type process struct {
	peers.Peer
	command func(ctx context.Context) *exec.Cmd
}

type request struct {
	Op   string      `json:"op"`
	Desc *peers.Desc `json:"desc,omitempty"`
	Hex  string      `json:"hex,omitempty"`
}

type response struct {
	Hex   *string     `json:"hex"`
	Desc  *peers.Desc `json:"desc"`
	Error string      `json:"error"`
}

// requireRuntime skips the test when a peer's runtime is missing, except
// under CI, where a broken install must fail rather than pass by skipping.
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

// runPeer asks the peer, in one run, to encode every case and to decode our
// encoding of every case, then checks each case in its own subtest.
func runPeer(t *testing.T, p process) {
	cases := peers.Cases()
	results := make([]peers.Result, len(cases))
	var reqs []request
	type answer struct {
		index  int
		encode bool
	}
	var answers []answer
	for i, c := range cases {
		e, r := c.Peers[p.Name], &results[i]
		if e.Skip != "" {
			continue
		}
		if e.PeerReadsOnly == "" {
			r.PeerWrote = true
			reqs = append(reqs, request{Op: "encode", Desc: c.Desc})
			answers = append(answers, answer{i, true})
		}
		if e.PeerWritesOnly == "" {
			r.Ours, r.OursErr = peers.Encode(c.Desc)
			if r.OursErr == nil {
				r.PeerRead = true
				reqs = append(reqs, request{Op: "decode", Hex: hex.EncodeToString(r.Ours)})
				answers = append(answers, answer{i, false})
			}
		}
	}

	resps := exchange(t, p, reqs)
	for k, a := range answers {
		resp, r := resps[k], &results[a.index]
		switch {
		case a.encode && resp.Error != "":
			r.PeerWriteErr = firstLines(resp.Error, 8)
		case a.encode && resp.Hex == nil:
			r.PeerWriteErr = "answer without hex"
		case a.encode:
			b, err := hex.DecodeString(*resp.Hex)
			if err != nil {
				r.PeerWriteErr = "bad hex: " + err.Error()
			}
			r.PeerBytes = b
		case resp.Error != "":
			r.PeerReadErr = firstLines(resp.Error, 8)
		default:
			r.PeerSaw = resp.Desc
		}
	}

	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			e := c.Peers[p.Name]
			if e.Skip != "" {
				t.Skip(e.Skip)
			}
			peers.Check(t, p.Peer, c, e, results[i])
		})
	}
}

// exchange runs the peer once with every request and returns its answers in
// order.
func exchange(t *testing.T, p process, reqs []request) []response {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			t.Fatalf("writing request: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := p.command(ctx)
	cmd.Stdin = &in
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("running %s: %v\nstderr:\n%s", p.Name, err, firstLines(errOut.String(), 40))
	}
	var resps []response
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s answered a line that is not a response: %v: %.200s", p.Name, err, sc.Text())
		}
		resps = append(resps, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s's answers: %v", p.Name, err)
	}
	if len(resps) != len(reqs) {
		t.Fatalf("%s answered %d of %d requests\nstderr:\n%s", p.Name, len(resps), len(reqs), firstLines(errOut.String(), 40))
	}
	return resps
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func fileExists(path string) error {
	_, err := os.Stat(path)
	return err
}
