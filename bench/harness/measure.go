package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// measure runs one load process against r: closed loop when rate is 0,
// open loop at rate otherwise.
func (s *stack) measure(ctx context.Context, r *row, duration, warmup time.Duration, rate float64) (*loadResult, error) {
	ctx, cancel := context.WithTimeout(ctx, warmup+duration+2*loadDrain+30*time.Second)
	defer cancel()
	argv := append(append([]string(nil), s.self...), "load",
		"-url", r.url, "-conns", strconv.Itoa(r.conns),
		"-duration", duration.String(), "-warmup", warmup.String())
	if rate > 0 {
		argv = append(argv, "-rate", strconv.FormatFloat(rate, 'f', 1, 64))
	}
	if strings.HasPrefix(r.url, "https:") {
		argv = append(argv, "-ca", s.certs.caFile)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		argv = append(argv, "-header", r.header[i]+": "+r.header[i+1])
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	detach(cmd)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("load run: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var res loadResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("reading the load run's result %q: %w", stdout.String(), err)
	}
	if res.OK == 0 {
		return nil, fmt.Errorf("no call succeeded (%d errors, first: %s)", res.Errors, res.FirstError)
	}
	return &res, nil
}

// rowProfile is what was profiled of the gateway during one row.
type rowProfile struct {
	row                 *row
	cpuFile, allocsFile string
	cpuTop, allocsTop   string // go tool pprof -top, the header and top lines
}

// profileTopLines is how many functions of each profile the report shows.
const profileTopLines = 12

// profile loads r's gateway closed loop while taking a CPU profile and an
// allocation profile (the allocations of the run: a delta of two heap
// profiles) from its admin listener, then summarises both with go tool
// pprof -top. The allocation profile's file needs its .base beside it:
// go tool pprof -sample_index=alloc_space -base FILE.base FILE.
func (s *stack) profile(ctx context.Context, r *row, duration, warmup time.Duration, dir string) (*rowProfile, error) {
	if r.admin == "" {
		return nil, fmt.Errorf("%s is not a gateway row", r.name())
	}
	secs := max(1, int(math.Ceil(duration.Seconds())))
	pr := &rowProfile{
		row:        r,
		cpuFile:    filepath.Join(dir, r.id()+"-cpu.pprof"),
		allocsFile: filepath.Join(dir, r.id()+"-allocs.pprof"),
	}
	// Allocation samples reach the profile at garbage collections: heap
	// profiles taken right after a forced one (gc=1) before and after the
	// load make an exact delta (go tool pprof -base).
	client := &http.Client{Timeout: time.Duration(secs)*time.Second + 30*time.Second}
	allocsBase := pr.allocsFile + ".base"
	if err := download(ctx, client, r.admin+"/debug/pprof/heap?gc=1", allocsBase); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var loadErr, cpuErr error
	wg.Go(func() {
		// Longer than the CPU profile by the warm-up and a margin, so the
		// load covers the whole profiled window.
		_, loadErr = s.measure(ctx, r, time.Duration(secs)*time.Second+warmup+500*time.Millisecond, warmup, 0)
	})
	wg.Go(func() {
		cpuErr = download(ctx, client, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", r.admin, secs), pr.cpuFile)
	})
	wg.Wait()
	if err := errors.Join(loadErr, cpuErr); err != nil {
		return nil, err
	}
	if err := download(ctx, client, r.admin+"/debug/pprof/heap?gc=1", pr.allocsFile); err != nil {
		return nil, err
	}
	var err error
	if pr.cpuTop, err = pprofTop(ctx, pr.cpuFile); err != nil {
		return nil, err
	}
	if pr.allocsTop, err = pprofTop(ctx, pr.allocsFile, "-sample_index=alloc_space", "-base="+allocsBase); err != nil {
		return nil, err
	}
	return pr, nil
}

// download GETs url into file.
func download(ctx context.Context, client *http.Client, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("building GET %s: %w", url, err)
	}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return fmt.Errorf("GET %s: %d %s", url, res.StatusCode, body)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("saving %s: %w", url, err)
	}
	if _, err := io.Copy(f, io.LimitReader(res.Body, 256<<20)); err != nil {
		f.Close()
		return fmt.Errorf("saving %s to %s: %w", url, file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("saving %s to %s: %w", url, file, err)
	}
	return nil
}

// pprofTop returns the column header and the top functions of go tool
// pprof -top for file.
func pprofTop(ctx context.Context, file string, flags ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args := append([]string{"tool", "pprof", "-top", "-nodecount=" + strconv.Itoa(profileTopLines)}, flags...)
	out, err := exec.CommandContext(ctx, "go", append(args, file)...).Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof -top %s: %w", file, err)
	}
	text := string(out)
	if i := strings.Index(text, "      flat"); i >= 0 {
		text = text[i:]
	}
	return text, nil
}
