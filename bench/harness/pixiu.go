package main

// Apache dubbo-go-pixiu as a measured baseline (-pixiu): the same HTTP
// request as row 4 (GET /api/users/{id}), turned into the same generic
// getUser call to the same demo provider process, through pixiu instead of
// dubbogw.
//
// pixiu's HTTP→Dubbo path is its stock one: dgp.filter.http.apiconfig
// matches the route and maps the path parameter to getUser's String
// argument, dgp.filter.http.dubboproxy invokes it through dubbo-go's
// generic service. That client finds providers only through a registry
// (pixiu's other Dubbo filter, directdubboproxy, takes a static cluster
// but serves another request: POST /{application}/{interface}/{method}
// with the arguments as a JSON body, and connects anew for every call).
// pixiu v1.1.0 builds on dubbo-go v3.3.1, whose registries default to
// application-level discovery, and pixiu sets no other registry type: so
// the harness starts a private ZooKeeper and writes the demo provider into
// it as an application, in the layout dubbo-go 3.3 reads (pixiuNodes).
//
// pixiu itself is built from test/pixiu, a module of its own: its
// dependencies would move the root module's and test/interop's.

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/internal/zk"
)

// pixiuVersion is the release test/pixiu's go.mod requires.
const pixiuVersion = "v1.1.0"

// pixiuApp is the application the demo provider is registered as for
// pixiu's application-level discovery.
const pixiuApp = "demo-provider"

// zkServerScript is the Debian package zookeeper's launcher.
const zkServerScript = "/usr/share/zookeeper/bin/zkServer.sh"

// pixiuStartTimeout bounds pixiu's start: its first call subscribes to
// the registry and fetches the provider's metadata.
const pixiuStartTimeout = 60 * time.Second

// zkStartTimeout bounds ZooKeeper's start (a JVM).
const zkStartTimeout = 60 * time.Second

// pixiuExtraTimeout is added to -timeout's default with -pixiu: the
// launcher's first build and ZooKeeper's start, and pixiu's rows.
const pixiuExtraTimeout = 6 * time.Minute

// preparePixiu makes sure ZooKeeper is installed (installing it when
// install is set) and builds pixiu into dir.
func preparePixiu(ctx context.Context, install bool, dir string, logger *slog.Logger) (string, error) {
	if err := findZooKeeper(ctx, install); err != nil {
		return "", err
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	logger.Info("building pixiu (the first build takes minutes)", "version", pixiuVersion, "module", filepath.Join(root, "test", "pixiu"))
	return buildPixiu(ctx, root, dir)
}

// buildPixiu builds test/pixiu (pixiu's own command, a module of its own)
// into dir.
func buildPixiu(ctx context.Context, root, dir string) (string, error) {
	return goBuild(ctx, 10*time.Minute, filepath.Join(root, "test", "pixiu"), ".", filepath.Join(dir, "pixiu"))
}

// findZooKeeper makes sure the Debian package zookeeper is installed,
// installing it when install is set.
func findZooKeeper(ctx context.Context, install bool) error {
	if _, err := os.Stat(zkServerScript); err == nil {
		return nil
	}
	if !install {
		return fmt.Errorf("%w: zookeeper (Debian package; or run with -install)", errMissingTools)
	}
	if err := aptInstall(ctx, []string{"zookeeper"}); err != nil {
		return err
	}
	if _, err := os.Stat(zkServerScript); err != nil {
		return fmt.Errorf("%w after installing zookeeper: %w", errMissingTools, err)
	}
	return nil
}

// zooCfg is a standalone ZooKeeper's configuration: data under dataDir,
// clients on 127.0.0.1:port only, ruok allowed for the readiness check.
func zooCfg(dataDir string, port int) string {
	return fmt.Sprintf(`# written by bench/harness
tickTime=2000
initLimit=10
syncLimit=5
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
maxClientCnxns=200
`, dataDir, port)
}

// startZooKeeper starts a private ZooKeeper in the foreground (so that it
// is a child stopped with the others), everything under s.dir/zk.
func (s *stack) startZooKeeper(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	zkDir := filepath.Join(s.dir, "zk")
	if err := os.MkdirAll(filepath.Join(zkDir, "data"), 0o755); err != nil {
		return fmt.Errorf("making ZooKeeper's directory: %w", err)
	}
	cfg := filepath.Join(zkDir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(zooCfg(filepath.Join(zkDir, "data"), port)), 0o644); err != nil {
		return fmt.Errorf("writing ZooKeeper's config: %w", err)
	}
	c, err := startChild(s.dir, "zookeeper", nil, "env", "JMXDISABLE=true", "ZOO_LOG_DIR="+zkDir,
		zkServerScript, "start-foreground", cfg)
	if err != nil {
		return err
	}
	s.children = append(s.children, c)
	s.zk = "127.0.0.1:" + strconv.Itoa(port)
	return waitFor(ctx, c, "ZooKeeper on "+s.zk, zkStartTimeout, func(ctx context.Context) error {
		return zkRuok(ctx, s.zk)
	})
}

// zkRuok asks ZooKeeper at addr "ruok" and wants "imok".
func zkRuok(ctx context.Context, addr string) error {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "ruok"); err != nil {
		return fmt.Errorf("asking ZooKeeper ruok: %w", err)
	}
	answer, err := io.ReadAll(io.LimitReader(c, 64))
	if err != nil {
		return fmt.Errorf("reading ZooKeeper's answer to ruok: %w", err)
	}
	if string(answer) != "imok" {
		return fmt.Errorf("ZooKeeper answered ruok with %q", answer)
	}
	return nil
}

// zkNode is one node to create, with its data.
type zkNode struct {
	path string
	data []byte
}

// pixiuNodes are the nodes that register the demo provider at provider
// (host:port) for application-level discovery, as dubbo-go 3.3 reads them
// (registry/zookeeper/service_discovery.go, metadata/report/zookeeper):
//
//	/dubbo/mapping/<interface>     "<app>"
//	/services/<app>/<host:port>    the instance (Curator's JSON), metadata storage "remote"
//	/dubbo/<app>/<revision>        the MetadataInfo of the revision
//
// dubbo-go keeps the metadata at /dubbo/<app>/<revision>, where Java Dubbo
// 3 keeps it at /dubbo/metadata/<app>/<revision> (appdisc.go): pixiu is a
// dubbo-go consumer, so the former. Parents come first.
func pixiuNodes(provider string) ([]zkNode, error) {
	host, portText, err := net.SplitHostPort(provider)
	if err != nil {
		return nil, fmt.Errorf("the provider's address %q: %w", provider, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("the provider's port %q: %w", portText, err)
	}
	sum := md5.Sum([]byte(pixiuApp + "|" + demo.UserInterface + "|" + provider))
	revision := hex.EncodeToString(sum[:])
	in := curatorInstance{
		Name: pixiuApp, ID: provider, Address: host, Port: port,
		Payload: curatorPayload{
			Class: "org.apache.dubbo.registry.zookeeper.ZookeeperInstance", ID: provider, Name: pixiuApp,
			Metadata: map[string]string{
				"dubbo.endpoints":             `[{"port":` + portText + `,"protocol":"dubbo"}]`,
				"dubbo.metadata.revision":     revision,
				"dubbo.metadata.storage-type": "remote",
			},
		},
		RegistrationTimeUTC: time.Now().UnixMilli(),
		ServiceType:         "DYNAMIC",
	}
	meta := metadataDoc{App: pixiuApp, Revision: revision, Services: map[string]metadataService{
		demo.UserInterface + ":dubbo": {
			Name: demo.UserInterface, Protocol: "dubbo", Port: port, Path: demo.UserInterface,
			Params: map[string]string{
				"anyhost": "true", "application": pixiuApp, "deprecated": "false", "dubbo": "2.0.2",
				"dynamic": "true", "generic": "false", "interface": demo.UserInterface,
				"methods": "createUser,fail,getUser,greet,listUsers,slow", "path": demo.UserInterface,
				"release": "3.2.10", "side": "provider",
			},
		},
	}}
	instanceJSON, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding the instance: %w", err)
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encoding the metadata: %w", err)
	}
	return []zkNode{
		{path: "/dubbo"}, {path: "/dubbo/mapping"},
		{path: "/dubbo/mapping/" + demo.UserInterface, data: []byte(pixiuApp)},
		{path: "/services"}, {path: "/services/" + pixiuApp},
		{path: "/services/" + pixiuApp + "/" + provider, data: instanceJSON},
		{path: "/dubbo/" + pixiuApp},
		{path: "/dubbo/" + pixiuApp + "/" + revision, data: metaJSON},
	}, nil
}

// registerForPixiu writes pixiuNodes for provider into ZooKeeper at zkAddr.
func registerForPixiu(zkAddr, provider string) error {
	nodes, err := pixiuNodes(provider)
	if err != nil {
		return err
	}
	conn, err := zkConnect(zkAddr, 10*time.Second)
	if err != nil {
		return fmt.Errorf("registering the provider for pixiu: %w", err)
	}
	defer conn.Close()
	for _, n := range nodes {
		if _, err := conn.Create(n.path, n.data, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("registering the provider for pixiu: create %s: %w", n.path, err)
		}
	}
	return nil
}

// pixiuSpec is what the pixiu process is configured with.
type pixiuSpec struct {
	listen    string // 127.0.0.1:port
	zk        string // ZooKeeper's host:port
	apiConfig string // path of the API configuration (pixiuAPIConfig)
}

// pixiuRoutePath is row 4's route in pixiu's syntax: the same path,
// /api/users/{id}.
const pixiuRoutePath = "/api/users/:id"

// pixiuConf renders pixiu's bootstrap configuration: one HTTP listener
// whose filters are the API configuration (the route) and the Dubbo proxy
// (the generic call through dubbo-go, providers from ZooKeeper). A call
// times out after 5 s; logs at warn, on stderr (dubbo-go's own logger
// still writes its start at info).
func pixiuConf(spec pixiuSpec) (string, error) {
	host, port, err := net.SplitHostPort(spec.listen)
	if err != nil {
		return "", fmt.Errorf("pixiu's listen address %q: %w", spec.listen, err)
	}
	return fmt.Sprintf(`# written by bench/harness
static_resources:
  listeners:
    - name: net/http
      protocol_type: HTTP
      address:
        socket_address: {address: %q, port: %s}
      filter_chains:
        filters:
          - name: dgp.filter.httpconnectionmanager
            config:
              route_config:
                routes:
                  - match: {prefix: "*"}
              http_filters:
                - name: dgp.filter.http.apiconfig
                  config: {path: %q}
                - name: dgp.filter.http.dubboproxy
                  config:
                    dubboProxyConfig:
                      registries:
                        zk: {protocol: zookeeper, address: %q, timeout: 5s}
                      timeout_config: {connect_timeout: 5s, request_timeout: 5s}
      config: {idle_timeout: 120s, read_timeout: 10s, write_timeout: 10s}
log:
  level: warn
  encoding: console
  encoderConfig: {messageKey: message, levelKey: level, timeKey: time, callerKey: caller, stacktraceKey: stacktrace, levelEncoder: capital, timeEncoder: iso8601, durationEncoder: seconds, callerEncoder: short}
  outputPaths: [stderr]
  errorOutputPaths: [stderr]
`, host, port, spec.apiConfig, spec.zk), nil
}

// pixiuAPIConfig renders pixiu's API configuration: row 4's route, GET
// /api/users/{id} → com.example.demo.UserService.getUser(String id) of
// application pixiuApp, no version, no group.
func pixiuAPIConfig() string {
	return fmt.Sprintf(`# written by bench/harness
name: harness
description: row 4's route, for pixiu
resources:
  - path: %q
    type: restful
    description: getUser
    methods:
      - httpVerb: GET
        enable: true
        timeout: 5s
        inboundRequest: {requestType: http}
        integrationRequest:
          requestType: dubbo
          applicationName: %q
          interface: %q
          method: getUser
          mappingParams:
            - {name: uri.id, mapTo: "0", mapType: java.lang.String}
`, pixiuRoutePath, pixiuApp, demo.UserInterface)
}

// startPixiu registers the demo provider's first port in ZooKeeper,
// writes pixiu's configuration and starts it; it is ready when row 4's
// request answers 200 (its first call subscribes and fetches the
// provider's metadata).
func (s *stack) startPixiu(ctx context.Context, bin string) error {
	if err := registerForPixiu(s.zk, s.providers[0]); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	spec := pixiuSpec{listen: "127.0.0.1:" + strconv.Itoa(port), zk: s.zk, apiConfig: filepath.Join(s.dir, "pixiu-api.yaml")}
	conf, err := pixiuConf(spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(spec.apiConfig, []byte(pixiuAPIConfig()), 0o644); err != nil {
		return fmt.Errorf("writing pixiu's API config: %w", err)
	}
	confPath := filepath.Join(s.dir, "pixiu.yaml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("writing pixiu's config: %w", err)
	}
	c, err := startChild(s.dir, "pixiu", nil, bin, "gateway", "start", "-c", confPath, "-l", "warn")
	if err != nil {
		return err
	}
	s.children = append(s.children, c)
	s.pixiu = "http://" + spec.listen
	if err := waitFor(ctx, c, "pixiu on "+spec.listen, pixiuStartTimeout, func(ctx context.Context) error {
		status, body, err := httpGet(ctx, s.client, s.pixiu+"/api/users/1")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("GET /api/users/1: %d %s", status, body)
		}
		return err
	}); err != nil {
		return fmt.Errorf("%w (log: %s)", err, filepath.Join(s.dir, "pixiu.log"))
	}
	return nil
}

// sameJSON reports whether two JSON documents hold the same value (object
// keys in any order), and why not.
func sameJSON(got, want string) error {
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return fmt.Errorf("the reference is not JSON: %w", err)
	}
	if !reflect.DeepEqual(g, w) {
		return errors.New("a different value")
	}
	return nil
}

// checkPixiuAnswer is the smoke check of a pixiu row: its answer must be
// row 4's JSON value. The bytes differ: pixiu v1.1.0 writes the fields in
// its own order and no final newline (62 bytes where row 4 moves 63).
// want is row 4's body.
func checkPixiuAnswer(r *row, body, want string) error {
	if err := sameJSON(body, want); err != nil {
		return fmt.Errorf("checking %s: GET %s answered %q, dubbogw's HTTP→Dubbo row %q: %w; pixiu's answer is wrong, nothing measured",
			r.name(), r.url, strings.TrimSpace(body), strings.TrimSpace(want), err)
	}
	return nil
}
