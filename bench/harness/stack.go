package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stack is every process measured, all on 127.0.0.1, each its own process:
// the echo upstream and the demo provider (harness subcommands), a private
// Redis, nginx and one gateway per route count.
type stack struct {
	dir      string
	self     []string // argv prefix that runs a harness subcommand
	children []*child // stopped in reverse order by Close
	client   *http.Client

	upstream  string // http://127.0.0.1:port
	nginx     string // http://127.0.0.1:port
	nginxTLS  string // https://127.0.0.1:port
	certs     *benchCerts
	providers []string // host:port of each provider port
	triple    string   // host:port of the provider's Triple side
	redis     string   // host:port
	gateways  map[int]*gatewayProc
	token     string // the auth rows' token, stored in Redis
	engines   []engineProc
	zk        string // -pixiu: the private ZooKeeper's host:port, pixiu's registry
	pixiu     string // -pixiu: http://127.0.0.1:port of pixiu, "" without it
}

// engineProc is one bare engine proxy (test/interop/cmd/engineproxy).
type engineProc struct {
	name string
	url  string // http://127.0.0.1:port
}

// gatewayProc is one running gateway binary.
type gatewayProc struct {
	routes int
	url    string // http://127.0.0.1:port
	tlsURL string // https://127.0.0.1:port
	admin  string // http://127.0.0.1:port
}

// stackSpec sizes the stack.
type stackSpec struct {
	gatewayBin     string
	nginxBin       string
	redisBin       string
	routeCounts    []int // a gateway per count
	providerCounts []int // the largest is how many provider ports
	maxConns       int   // keep-alive pools are sized for it
	redisTimeout   time.Duration
	engineBin      string   // test/interop/cmd/engineproxy, built when engines are measured
	engines        []string // the engines to measure (-engines)
	pixiuBin       string   // test/pixiu, built with -pixiu: pixiu and a ZooKeeper are started
}

// startTimeout bounds each process's start.
const startTimeout = 20 * time.Second

// benchToken is the token the auth rows send, with its value in Redis.
const (
	benchToken      = "harness-token"
	benchTokenValue = `{"userId":"u42"}`
)

func startStack(ctx context.Context, dir string, self []string, spec stackSpec, logger *slog.Logger) (s *stack, err error) {
	s = &stack{
		dir:      dir,
		self:     self,
		gateways: make(map[int]*gatewayProc),
		client:   &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		token:    benchToken,
	}
	started := s // what to stop on an error: the returns below set s to nil
	defer func() {
		if err != nil {
			started.Close()
		}
	}()
	if s.certs, err = writeBenchCerts(dir); err != nil {
		return nil, err
	}
	pool, err := s.certs.pool()
	if err != nil {
		return nil, err
	}
	s.client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}

	c, addr, err := startReporting(dir, "upstream", startTimeout, append(self, "upstream", "-listen", "127.0.0.1:0")...)
	if err != nil {
		return nil, err
	}
	s.children = append(s.children, c)
	s.upstream = "http://" + addr
	logger.Info("echo upstream up", "addr", addr)

	maxProviders := 1
	for _, n := range spec.providerCounts {
		maxProviders = max(maxProviders, n)
	}
	c, addrs, err := startReporting(dir, "provider", startTimeout, append(self, "provider", "-ports", strconv.Itoa(maxProviders))...)
	if err != nil {
		return nil, err
	}
	s.children = append(s.children, c)
	dubboAddrs, tri, ok := strings.Cut(addrs, " ")
	if !ok {
		return nil, fmt.Errorf("the demo provider said %q: want its dubbo addresses and its Triple address", addrs)
	}
	s.providers, s.triple = strings.Split(dubboAddrs, ","), tri
	logger.Info("demo provider up", "ports", len(s.providers), "triple", s.triple)

	if err := s.startRedis(ctx, spec); err != nil {
		return nil, err
	}
	tokenPrefix := fmt.Sprintf("harness:%d:", time.Now().UnixNano())
	if reply, err := redisCommand(ctx, s.redis, "SET", tokenPrefix+benchToken, benchTokenValue, "EX", "86400"); err != nil || reply != "+OK" {
		return nil, fmt.Errorf("storing the token in Redis: %q, %v", reply, err)
	}
	logger.Info("redis up, token stored", "addr", s.redis)

	for _, routes := range spec.routeCounts {
		if err := s.startGateway(ctx, spec, routes, tokenPrefix); err != nil {
			return nil, err
		}
		logger.Info("gateway up", "routes", routes, "url", s.gateways[routes].url)
	}
	if err := s.startNginx(ctx, spec); err != nil {
		return nil, err
	}
	logger.Info("nginx up", "url", s.nginx)
	for _, name := range spec.engines {
		c, addr, err := startReporting(dir, "engine-"+name, startTimeout, spec.engineBin, "-engine", name,
			"-upstream", strings.TrimPrefix(s.upstream, "http://"), "-listen", "127.0.0.1:0", "-conns", strconv.Itoa(spec.maxConns))
		if err != nil {
			return nil, err
		}
		s.children = append(s.children, c)
		s.engines = append(s.engines, engineProc{name: name, url: "http://" + addr})
		logger.Info("bare engine proxy up", "engine", name, "addr", addr)
	}
	if spec.pixiuBin != "" {
		if err := s.startZooKeeper(ctx); err != nil {
			return nil, err
		}
		logger.Info("zookeeper up (pixiu's registry)", "addr", s.zk)
		if err := s.startPixiu(ctx, spec.pixiuBin); err != nil {
			return nil, err
		}
		logger.Info("pixiu up", "url", s.pixiu, "provider", s.providers[0])
	}
	return s, nil
}

// buildEngineProxy builds test/interop/cmd/engineproxy (the test module,
// which holds fasthttp) into dir.
func buildEngineProxy(ctx context.Context, root, dir string) (string, error) {
	return goBuild(ctx, 5*time.Minute, filepath.Join(root, "test", "interop"), "./cmd/engineproxy", filepath.Join(dir, "engineproxy"))
}

// goBuild builds pkg of the module in moduleDir into bin, within timeout.
func goBuild(ctx context.Context, timeout time.Duration, moduleDir, pkg, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = moduleDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s (go build %s in %s): %w\n%s", filepath.Base(bin), pkg, moduleDir, err, out)
	}
	return bin, nil
}

// Close stops every process, the last started first.
func (s *stack) Close() {
	for i := len(s.children) - 1; i >= 0; i-- {
		s.children[i].stop()
	}
	s.children = nil
	s.client.CloseIdleConnections()
}

func (s *stack) startRedis(ctx context.Context, spec stackSpec) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c, err := startChild(s.dir, "redis", nil, spec.redisBin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	if err != nil {
		return err
	}
	s.children = append(s.children, c)
	s.redis = "127.0.0.1:" + strconv.Itoa(port)
	return waitFor(ctx, c, "redis on "+s.redis, startTimeout, func(ctx context.Context) error {
		reply, err := redisCommand(ctx, s.redis, "PING")
		if err == nil && reply != "+PONG" {
			err = fmt.Errorf("PING answered %q", reply)
		}
		return err
	})
}

func (s *stack) startGateway(ctx context.Context, spec stackSpec, routes int, tokenPrefix string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	adminPort, err := freePort()
	if err != nil {
		return err
	}
	tlsPort, err := freePort()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("gateway-%d-routes", routes)
	gw := &gatewayProc{
		routes: routes,
		url:    "http://127.0.0.1:" + strconv.Itoa(port),
		tlsURL: "https://127.0.0.1:" + strconv.Itoa(tlsPort),
		admin:  "http://127.0.0.1:" + strconv.Itoa(adminPort),
	}
	yml := gatewayYAML(gatewaySpec{
		listen:         "127.0.0.1:" + strconv.Itoa(port),
		admin:          "127.0.0.1:" + strconv.Itoa(adminPort),
		accessLog:      filepath.Join(s.dir, name+"-access.log"),
		redis:          s.redis,
		upstream:       s.upstream,
		tokenPrefix:    tokenPrefix,
		providers:      s.providers,
		triple:         s.triple,
		providerCounts: spec.providerCounts,
		routes:         routes,
		idlePerTarget:  spec.maxConns,
		redisTimeout:   spec.redisTimeout,
		tlsListen:      "127.0.0.1:" + strconv.Itoa(tlsPort),
		certFile:       s.certs.certFile,
		keyFile:        s.certs.keyFile,
	})
	path := filepath.Join(s.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		return fmt.Errorf("writing the gateway config: %w", err)
	}
	c, err := startChild(s.dir, name, nil, spec.gatewayBin, "run", "--config", path)
	if err != nil {
		return err
	}
	s.children = append(s.children, c)
	if err := waitFor(ctx, c, name, startTimeout, func(ctx context.Context) error {
		status, body, err := httpGet(ctx, s.client, gw.admin+"/readyz")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("/readyz: %d %s", status, body)
		}
		return err
	}); err != nil {
		return fmt.Errorf("%w (log: %s)", err, filepath.Join(s.dir, name+".log"))
	}
	s.gateways[routes] = gw
	return nil
}

func (s *stack) startNginx(ctx context.Context, spec stackSpec) error {
	idle := spec.maxConns
	port, err := freePort()
	if err != nil {
		return err
	}
	prefix := filepath.Join(s.dir, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return fmt.Errorf("making nginx's prefix: %w", err)
	}
	// nginx's workers run as another user when started by root: let them in.
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return fmt.Errorf("opening the work directory to nginx's workers: %w", err)
	}
	tlsPort, err := freePort()
	if err != nil {
		return err
	}
	conf := filepath.Join(prefix, "nginx.conf")
	listen, tlsListen := "127.0.0.1:"+strconv.Itoa(port), "127.0.0.1:"+strconv.Itoa(tlsPort)
	if err := os.WriteFile(conf, []byte(nginxConf(prefix, listen, strings.TrimPrefix(s.upstream, "http://"), idle, tlsListen, s.certs)), 0o644); err != nil {
		return fmt.Errorf("writing nginx's config: %w", err)
	}
	c, err := startChild(s.dir, "nginx", nil, spec.nginxBin, "-p", prefix+"/", "-c", conf, "-e", filepath.Join(prefix, "error.log"))
	if err != nil {
		return err
	}
	s.children = append(s.children, c)
	s.nginx, s.nginxTLS = "http://"+listen, "https://"+tlsListen
	return waitFor(ctx, c, "nginx on "+listen, startTimeout, func(ctx context.Context) error {
		for _, u := range []string{s.nginx, s.nginxTLS} {
			status, body, err := httpGet(ctx, s.client, u+"/http/users/1")
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("GET through nginx: %d %s", status, body)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// checkAnswers makes sure every row's URL answers 200 with the same body
// before anything is measured, so every row moves the same bytes; a pixiu
// row must answer the same JSON value (checkPixiuAnswer).
func (s *stack) checkAnswers(ctx context.Context, rows []*row) error {
	var want string
	for _, r := range rows {
		status, body, err := httpGet(ctx, s.client, r.url, r.header...)
		if err != nil {
			return fmt.Errorf("checking %s: %w", r.name(), err)
		}
		if status != http.StatusOK {
			return fmt.Errorf("checking %s: GET %s answered %d %s", r.name(), r.url, status, body)
		}
		if want == "" {
			want = body
		}
		if r.kind == kindPixiuDubbo {
			if err := checkPixiuAnswer(r, body, want); err != nil {
				return err
			}
			continue
		}
		if body != want {
			return fmt.Errorf("checking %s: GET %s answered %q, other rows %q: every row must move the same bytes", r.name(), r.url, body, want)
		}
	}
	return nil
}

// buildGateway builds cmd/dubbogw of the module at root into dir.
func buildGateway(ctx context.Context, root, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "dubbogw")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/dubbogw")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building the gateway (go build ./cmd/dubbogw in %s): %w\n%s", root, err, out)
	}
	return bin, nil
}

// moduleRoot returns the directory of the go.mod the go command sees.
func moduleRoot(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root (go env GOMOD): %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("finding the module root: not inside a Go module; run from the repository")
	}
	return filepath.Dir(gomod), nil
}
