package configsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/zk"
)

// Options are what a Source is opened with.
type Options struct {
	// Timeout bounds one ZooKeeper read; at start, it is also how long
	// ZooKeeper is waited for before the cache stands in. Default 5s.
	Timeout time.Duration
	// Cache, when set, is a file every accepted configuration is written
	// to (mode 0600: it may hold secrets), and read at start when
	// ZooKeeper cannot be.
	Cache  string
	Logger *slog.Logger
}

// Source is a configuration held by one ZooKeeper node, for `dubbogw
// run`: read with a deadline and a size bound, watched, and remembered
// (what serves, what was refused) for /admin/config. It implements the
// gateway's Options.Source; Read is what its Options.Load reads.
type Source struct {
	loc   Location
	opts  Options
	log   *slog.Logger
	zk    *client
	retry time.Duration // between reads of a watch that failed

	mu       sync.Mutex
	last     snapshot  // what the last Read returned (the load the gateway reports on next)
	serving  snapshot  // what the gateway accepted last
	refused  *refusal  // the last load refused, until one is accepted
	lastRead time.Time // when a read last succeeded
	readErr  string    // the last read's problem, cleared by a success
}

// snapshot is one read of the node.
type snapshot struct {
	data      []byte
	version   int32 // -1 for the cache
	mzxid     int64
	modified  time.Time
	fromCache bool
}

type refusal struct {
	version  int32
	at       time.Time
	err      string
	problems []config.Problem
}

// Open starts a session to loc's servers (it connects in the
// background) and returns at once.
func Open(loc Location, opts Options) (*Source, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	log := opts.Logger.With("config_source", loc.String())
	c, err := dial(loc, opts.Timeout, log)
	if err != nil {
		return nil, err
	}
	return &Source{loc: loc, opts: opts, log: log, zk: c, retry: time.Second}, nil
}

// Close ends the session (after the gateway stopped watching).
func (s *Source) Close() { s.zk.close() }

// Name is the source as errors and logs name it, with no secret.
func (s *Source) Name() string { return s.loc.String() }

// read gets the node's data, arming a watch on it (or, when it does not
// exist, on its creation).
func (s *Source) read(ctx context.Context) (snapshot, error) {
	var snap snapshot
	err := s.zk.call(ctx, "reading", func(c *zk.Conn) error {
		data, st, _, err := c.GetW(s.loc.Path)
		if errors.Is(err, zk.ErrNoNode) {
			// Watch for its creation instead; created meanwhile, read it.
			switch ok, _, _, eerr := c.ExistsW(s.loc.Path); {
			case eerr != nil:
				return eerr
			case !ok:
				return errNoNode
			}
			data, st, _, err = c.GetW(s.loc.Path)
		}
		if err != nil {
			return err
		}
		if len(data) > MaxReadBytes {
			return fmt.Errorf("%d bytes: more than %d", len(data), MaxReadBytes)
		}
		snap = snapshot{data: data, version: st.Version, mzxid: st.Mzxid, modified: time.UnixMilli(st.Mtime)}
		return nil
	})
	s.mu.Lock()
	if err != nil {
		s.readErr = err.Error()
	} else {
		s.readErr, s.lastRead = "", time.Now()
	}
	s.mu.Unlock()
	return snap, err
}

// Read reads the node now, for a load (start, reload, or a change the
// watch saw). A failure is a *config.ReadError: nothing was read, and
// the gateway keeps what serves.
func (s *Source) Read() ([]byte, error) {
	snap, err := s.read(context.Background())
	if err != nil {
		return nil, &config.ReadError{Source: s.Name(), Err: err}
	}
	s.mu.Lock()
	s.last = snap
	s.mu.Unlock()
	return snap.data, nil
}

// ReadAtStart reads the node for the gateway's first configuration. When
// ZooKeeper cannot be read within the timeout and a cache file is set
// and holds a configuration, that is returned instead (name says which):
// the instance starts with the fleet's last configuration it accepted,
// and the watch loads ZooKeeper's as soon as it answers.
func (s *Source) ReadAtStart() (data []byte, name string, err error) {
	// A client that cannot connect fails a read as soon as it has tried
	// every server: ZooKeeper gets the whole timeout to answer.
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	for {
		var snap snapshot
		if snap, err = s.read(ctx); err == nil {
			s.mu.Lock()
			s.last = snap
			s.mu.Unlock()
			return snap.data, s.Name(), nil
		}
		if errors.Is(err, errNoNode) || !sleepCtx(ctx, 250*time.Millisecond) {
			break
		}
	}
	err = &config.ReadError{Source: s.Name(), Err: err}
	if s.opts.Cache == "" {
		return nil, "", err
	}
	cached, cerr := readCache(s.opts.Cache)
	if cerr != nil {
		return nil, "", fmt.Errorf("%w; and no cache to start from: %v", err, cerr)
	}
	s.log.Warn("ZOOKEEPER UNREACHABLE AT START: starting from the cached configuration; the watch loads ZooKeeper's once it answers",
		"cache", s.opts.Cache, "error", err)
	s.mu.Lock()
	s.last = snapshot{data: cached, version: -1, fromCache: true}
	s.mu.Unlock()
	return cached, "cache " + s.opts.Cache, nil
}

// sleepCtx waits d, or less when ctx ends first (false then).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func readCache(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, MaxReadBytes+1)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if b.Len() > MaxReadBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", path, MaxReadBytes)
	}
	return b.Bytes(), nil
}

// Loaded is told what became of the configuration Read returned last:
// err nil when it now serves (it is written to the cache), else why it
// was refused. A read that failed changes nothing.
func (s *Source) Loaded(err error) {
	var re *config.ReadError
	if errors.As(err, &re) {
		return
	}
	s.mu.Lock()
	last := s.last
	if err != nil {
		r := &refusal{version: last.version, at: time.Now(), err: err.Error()}
		var ce *config.Error
		if errors.As(err, &ce) {
			r.problems = ce.Problems
		}
		s.refused = r
		s.mu.Unlock()
		s.log.Error("configuration from ZooKeeper refused: the last good one keeps serving",
			"version", last.version, "error", err)
		return
	}
	s.serving, s.refused = last, nil
	s.mu.Unlock()
	if last.fromCache {
		return
	}
	s.log.Info("configuration from ZooKeeper applied", "version", last.version, "bytes", len(last.data),
		// From the write (the ZooKeeper server's clock) to now: how long
		// the change took to reach this instance.
		"since_modified", time.Since(last.modified).Round(time.Millisecond).String())
	if s.opts.Cache != "" {
		if err := writeFileAtomic(s.opts.Cache, last.data); err != nil {
			s.log.Warn("cannot write the configuration cache", "cache", s.opts.Cache, "error", err)
		}
	}
}

// writeFileAtomic replaces path with data: a temporary file in the same
// directory, synced, renamed over it, so a crash leaves the old file or
// the new one, never half of one. Mode 0600: a configuration may hold
// secrets.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// Watch follows the node until stop is closed: whenever its watch fires,
// or a session is (re-)established (a change made while this instance
// was cut off, or a watch lost with an expired session), it reads the
// node again, re-arming the watch, and calls changed when the data
// differs from what was loaded last. A read that fails is retried every
// second; meanwhile the last good configuration serves.
func (s *Source) Watch(stop <-chan struct{}, changed func()) {
	// A read under way when stop closes is given up at once: Shutdown
	// waits for Watch to return.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	retry := time.NewTimer(0)
	defer retry.Stop()
	var sessions uint64
	var notBefore time.Time // after a failed read: no other before the retry
	check := true
	for {
		state, n, fired := s.zk.status()
		if n != sessions && sessions > 0 {
			s.log.Info("ZooKeeper session established again: reading the configuration node",
				"session", fmt.Sprintf("%#x", s.zk.conn.SessionID()))
		}
		if n != sessions || fired {
			sessions, check = n, true
		}
		// A read that failed is not repeated at once, whatever wakes the
		// loop: one that fails by dropping the connection (an answer past
		// the size bound) would otherwise reconnect and read in a loop.
		if check && state == zk.StateHasSession && !time.Now().Before(notBefore) {
			snap, err := s.read(ctx)
			switch {
			case err == nil:
				check = false
				if s.differs(snap) {
					s.log.Info("configuration changed in ZooKeeper; loading it", "version", snap.version)
					changed()
					if s.differs(snap) { // the load could not read it: again in a while
						check = true
						retry.Reset(s.retry)
					}
				}
			case errors.Is(err, errNoNode):
				check = false // the existence watch fires when it is created
				s.log.Warn("configuration node missing in ZooKeeper: the last good configuration keeps serving", "error", err)
			case ctx.Err() != nil:
				return // stopping
			default:
				s.log.Warn("cannot read the configuration node; retrying", "error", err, "retry_in", s.retry)
				notBefore = time.Now().Add(s.retry)
				retry.Reset(s.retry)
			}
		}
		select {
		case <-stop:
			return
		case <-s.zk.wake:
		case <-retry.C:
		}
	}
}

// errNoNode is the configuration node missing: its creation is watched.
var errNoNode = errors.New("the node does not exist (`dubbogw config push` creates it)")

// differs reports whether snap is not what was loaded last. The same
// data under a new version (a push of the same file) is taken as
// serving, without a reload.
func (s *Source) differs(snap snapshot) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !bytes.Equal(snap.data, s.last.data) {
		return true
	}
	if s.refused == nil && bytes.Equal(snap.data, s.serving.data) {
		s.last, s.serving = snap, snap
	}
	return false
}

// Register exports the source's state to reg:
// dubbogw_config_source_connected (1 while its ZooKeeper session is up),
// dubbogw_config_source_version (the node's version serving; -1 from the
// cache) and dubbogw_config_source_refused (1 while the node's latest
// configuration is refused: the last good one serves).
func (s *Source) Register(reg prometheus.Registerer) error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	for _, c := range []prometheus.Collector{
		gauge("dubbogw_config_source_connected", "1 while the configuration's ZooKeeper session is up.", func() float64 {
			return boolGauge(s.zk.connected())
		}),
		gauge("dubbogw_config_source_version", "The ZooKeeper node's version of the configuration serving (-1: from the cache).", func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(s.serving.version)
		}),
		gauge("dubbogw_config_source_refused", "1 while the node's latest configuration is refused (the last good one serves).", func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return boolGauge(s.refused != nil)
		}),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering the configuration source's metrics: %w", err)
		}
	}
	return nil
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Status is what /admin/config shows of the source.
type Status struct {
	Kind      string `json:"kind"`     // "zookeeper"
	Location  string `json:"location"` // the URL, its credentials redacted
	Connected bool   `json:"connected"`
	// LastRead is when a read of the node last succeeded; ReadError the
	// last read's problem, until one succeeds.
	LastRead  time.Time      `json:"last_read,omitzero"`
	ReadError string         `json:"read_error,omitempty"`
	Serving   ServingStatus  `json:"serving"`
	Refused   *RefusalStatus `json:"refused,omitempty"`
	Cache     string         `json:"cache,omitempty"`
}

// ServingStatus is the configuration serving.
type ServingStatus struct {
	Version   int32     `json:"version"` // the node's data version; -1 from the cache
	Modified  time.Time `json:"modified,omitzero"`
	Bytes     int       `json:"bytes"`
	FromCache bool      `json:"from_cache,omitempty"`
}

// RefusalStatus is the last configuration refused, while no later one
// was accepted.
type RefusalStatus struct {
	Version  int32            `json:"version"`
	At       time.Time        `json:"at"`
	Error    string           `json:"error"`
	Problems []config.Problem `json:"problems,omitempty"`
}

// Describe returns the source's Status.
func (s *Source) Describe() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Kind: "zookeeper", Location: s.Name(), Connected: s.zk.connected(), LastRead: s.lastRead, ReadError: s.readErr,
		Serving: ServingStatus{Version: s.serving.version, Modified: s.serving.modified, Bytes: len(s.serving.data), FromCache: s.serving.fromCache},
		Cache:   s.opts.Cache}
	if r := s.refused; r != nil {
		st.Refused = &RefusalStatus{Version: r.version, At: r.at, Error: r.err, Problems: r.problems}
	}
	return st
}
