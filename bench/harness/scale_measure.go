package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// What the scale command reads of the gateway: /readyz, pages of
// /admin/services, /metrics, and /proc/<pid> for memory and CPU.

// readyPoll is how often /readyz is asked during a start, at most.
const readyPoll = 2 * time.Millisecond

// adminCallTimeout bounds one call to the admin listener.
const adminCallTimeout = 30 * time.Second

// maxAdminBody bounds one answer of the admin listener (a page of 5,000
// services with their providers is a few MB).
const maxAdminBody = 256 << 20

// serviceView is the part of one service of /admin/services read here.
type serviceView struct {
	Service   string         `json:"service"`
	State     string         `json:"state"`
	Updated   time.Time      `json:"updated"`
	Providers []providerView `json:"providers"`
}

type providerView struct {
	Address  string `json:"address"`
	Source   string `json:"source"`
	Revision string `json:"revision"`
}

// provider returns the provider at addr, nil when not listed.
func (s *serviceView) provider(addr string) *providerView {
	for i := range s.Providers {
		if s.Providers[i].Address == addr {
			return &s.Providers[i]
		}
	}
	return nil
}

type servicesAnswer struct {
	Total    int           `json:"total"`
	Next     string        `json:"next"`
	Services []serviceView `json:"services"`
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// servicesPage GETs path (with query) of the admin listener and decodes
// it as /admin/services; it returns the answer and its size in bytes.
func (gw *scaleGateway) servicesPage(ctx context.Context, path string, query url.Values) (*servicesAnswer, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, adminCallTimeout)
	defer cancel()
	u := gw.admin + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("building GET %s: %w", u, err)
	}
	res, err := gw.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", u, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return nil, 0, fmt.Errorf("GET %s: %d %s", u, res.StatusCode, body)
	}
	cr := &countingReader{r: io.LimitReader(res.Body, maxAdminBody)}
	var a servicesAnswer
	if err := json.NewDecoder(cr).Decode(&a); err != nil {
		return nil, cr.n, fmt.Errorf("decoding GET %s: %w", u, err)
	}
	// The rest (a newline) counts too.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return nil, cr.n, fmt.Errorf("reading GET %s: %w", u, err)
	}
	return &a, cr.n, nil
}

// walkServices pages through /admin/services, limit services a page (0:
// the default page), calling visit for each service; it returns the pages
// and bytes read.
func (gw *scaleGateway) walkServices(ctx context.Context, limit int, visit func(*serviceView)) (pages int, size int64, err error) {
	after := ""
	for {
		q := url.Values{}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if after != "" {
			q.Set("after", after)
		}
		a, n, err := gw.servicesPage(ctx, "/admin/services", q)
		size += n
		if err != nil {
			return pages, size, err
		}
		pages++
		for i := range a.Services {
			visit(&a.Services[i])
		}
		if a.Next == "" || len(a.Services) == 0 {
			return pages, size, nil
		}
		if pages > maxServices {
			return pages, size, errors.New("paging through /admin/services does not end")
		}
		after = a.Next
	}
}

// startupResult is what a gateway's start looked like.
type startupResult struct {
	// ready is when /readyz was first seen answering 200, polls how often
	// it was asked before.
	ready time.Time
	polls int
	// incompleteAtReady counts the services that did not list all their
	// providers in the walk of /admin/services begun as soon as /readyz
	// answered 200: the services /readyz said ready too early.
	incompleteAtReady int
	// allKnown is the latest of the services' publication times (the
	// gateway's own "updated", by its clock on this machine) in the
	// answers where each was first seen complete: when the last service
	// became complete. The ZooKeeper registry publishes a service only
	// when its providers change, so this is when it got the last of them.
	allKnown time.Time
	// publishedAfterReady counts the services whose completing
	// publication came after the first 200 was seen, by those times.
	publishedAfterReady int
	// walks is how many times /admin/services was paged through.
	walks int
}

// readyEarly reports whether /readyz answered 200 while some service did
// not list all its providers yet.
func (s *startupResult) readyEarly() bool { return s.incompleteAtReady > 0 }

// completeness tells whether a service lists every provider lay gives it.
type completeness struct {
	lay  registryOptions
	want map[string]int // service key -> interface index
}

func newCompleteness(lay registryOptions) *completeness {
	c := &completeness{lay: lay, want: make(map[string]int, lay.services)}
	for i := range lay.services {
		c.want[lay.iface(i)] = i
	}
	return c
}

// complete reports whether s is a route's service listing exactly its
// providers (with the two layouts, each from both).
func (c *completeness) complete(s *serviceView) bool {
	i, ok := c.want[s.Service]
	n := c.lay.providersPerService()
	if !ok || s.State == "pending" || len(s.Providers) != n {
		return false
	}
	for j := range n {
		p := s.provider(c.lay.providerAddr(i, j))
		if p == nil || c.lay.mode == modeBoth && p.Source != "both" {
			return false
		}
	}
	return true
}

// politePoll is the pause before asking the gateway again: interval, or
// ten times what the last answer took when that is longer, so that
// polling takes at most about a tenth of one of the gateway's cores
// (/readyz and /admin/services?service= cost the gateway time that grows
// with the number of routes).
func politePoll(interval, took time.Duration) time.Duration { return max(interval, 10*took) }

// watchStartup polls /readyz until it answers 200, then pages through
// /admin/services until every route's service lists all its providers,
// until ctx ends. Nothing else asks the gateway anything meanwhile: the
// walks begin once /readyz is 200, and the time every provider was known
// comes from the gateway's publication times, not from when a walk saw it.
func watchStartup(ctx context.Context, gw *scaleGateway, lay registryOptions) (*startupResult, error) {
	st := &startupResult{}
	for {
		st.polls++
		began := time.Now()
		status, _, err := httpGet(ctx, gw.client, gw.admin+"/readyz")
		if err == nil && status == http.StatusOK {
			st.ready = time.Now()
			break
		}
		// Until the route table is built the admin listener is not bound:
		// connections are refused.
		timer := time.NewTimer(politePoll(readyPoll, time.Since(began)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return st, fmt.Errorf("/readyz never answered 200 (%d polls): %w", st.polls, ctx.Err())
		case <-gw.child.done:
			timer.Stop()
			return st, fmt.Errorf("the gateway exited (%v)", gw.child.err)
		case <-timer.C:
		}
	}

	c := newCompleteness(lay)
	completedAt := make(map[string]time.Time, lay.services) // the completing publication's time
	for {
		began := time.Now()
		_, _, err := gw.walkServices(ctx, 0, func(s *serviceView) {
			if _, done := completedAt[s.Service]; done || !c.complete(s) {
				return
			}
			at := s.Updated
			if at.IsZero() {
				at = time.Now()
			}
			completedAt[s.Service] = at
		})
		if err != nil {
			return st, fmt.Errorf("%d of %d services complete after %d walks: %w", len(completedAt), lay.services, st.walks, err)
		}
		st.walks++
		if st.walks == 1 {
			st.incompleteAtReady = lay.services - len(completedAt)
		}
		if len(completedAt) == lay.services {
			break
		}
		if err := sleepCtx(ctx, max(100*time.Millisecond, 2*time.Since(began))); err != nil {
			return st, fmt.Errorf("%d of %d services complete after %d walks: %w", len(completedAt), lay.services, st.walks, err)
		}
	}
	for _, at := range completedAt {
		if at.After(st.allKnown) {
			st.allKnown = at
		}
		if at.After(st.ready) {
			st.publishedAfterReady++
		}
	}
	return st, nil
}

// metricsScrape is what one GET /metrics returned.
type metricsScrape struct {
	bytes      int64
	lines      int
	goroutines int
}

// scrapeMetrics GETs /metrics: its size and go_goroutines.
func (gw *scaleGateway) scrapeMetrics(ctx context.Context) (*metricsScrape, error) {
	ctx, cancel := context.WithTimeout(ctx, adminCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gw.admin+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("building GET /metrics: %w", err)
	}
	// Prometheus's text format, uncompressed, as a scraper asking for
	// nothing else gets it.
	req.Header.Set("Accept-Encoding", "identity")
	res, err := gw.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d", res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAdminBody))
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	m := &metricsScrape{bytes: int64(len(body)), goroutines: -1}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m.lines++
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("/metrics: go_goroutines %q: %w", v, err)
			}
			m.goroutines = int(f)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	if m.goroutines < 0 {
		return nil, errors.New("/metrics has no go_goroutines")
	}
	return m, nil
}

// procMemory reads a process's resident set size and its peak (VmRSS,
// VmHWM) from /proc/<pid>/status, in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("reading the gateway's memory: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || name != "VmRSS" && name != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s %q: %w", pid, name, v, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	return rss, hwm, nil
}

// clockTicks is the unit of utime and stime in /proc/<pid>/stat
// (USER_HZ: 100 on every Linux architecture Go supports but alpha and
// ia64, which are not among them).
const clockTicks = 100

// procCPU is the CPU time a process has used (user and system), from
// /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("reading the gateway's CPU time: %w", err)
	}
	// The command name (field 2) may hold spaces: fields count from after
	// its closing parenthesis, where field 3 (state) starts.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] { // utime (14) and stime (15)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %q: %w", pid, s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// cpuOver measures a process's CPU over d, in cores.
func cpuOver(ctx context.Context, pid int, d time.Duration) (float64, error) {
	c0, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := sleepCtx(ctx, d); err != nil {
		return 0, err
	}
	c1, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	return (c1 - c0).Seconds() / time.Since(t0).Seconds(), nil
}
