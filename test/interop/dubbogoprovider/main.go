// Command dubbogoprovider is a real Apache dubbo-go v3.3.0 provider for
// dubbogw's interop tests and benchmarks (test/interop): the services of
// service.go over the dubbo protocol with hessian2, bound to 127.0.0.1,
// optionally registered in ZooKeeper both ways (interface-level nodes
// under /dubbo/<interface>/providers and the application-level instance).
//
// It prints "ready <host:port>" on stdout once the services are exported
// and exits when its standard input closes, so it never outlives the test
// that started it.
//
//	dubbogoprovider [-zk 127.0.0.1:2181] [-heartbeat 500ms -session-timeout 2s]
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	_ "dubbo.apache.org/dubbo-go/v3/cluster/cluster/failover"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	//lint:ignore SA1019 the config API is deprecated for users since 3.2.0, but
	// its Load returns once the services are exported (the newer server.Serve
	// blocks without saying when), and dubbo-go-samples' generic providers use it.
	"dubbo.apache.org/dubbo-go/v3/config"
	// The provider filter chain dubbo-go builds by default
	// (constant.DefaultServiceFilters); a filter it names but nobody
	// registered makes every call panic.
	_ "dubbo.apache.org/dubbo-go/v3/filter/accesslog"
	_ "dubbo.apache.org/dubbo-go/v3/filter/echo"
	_ "dubbo.apache.org/dubbo-go/v3/filter/exec_limit"
	_ "dubbo.apache.org/dubbo-go/v3/filter/generic"
	_ "dubbo.apache.org/dubbo-go/v3/filter/graceful_shutdown"
	_ "dubbo.apache.org/dubbo-go/v3/filter/token"
	_ "dubbo.apache.org/dubbo-go/v3/filter/tps"
	_ "dubbo.apache.org/dubbo-go/v3/metadata/mapping/metadata"
	_ "dubbo.apache.org/dubbo-go/v3/metadata/report/zookeeper"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/dubbo"
	_ "dubbo.apache.org/dubbo-go/v3/proxy/proxy_factory"
	_ "dubbo.apache.org/dubbo-go/v3/registry/protocol"
	_ "dubbo.apache.org/dubbo-go/v3/registry/servicediscovery"
	_ "dubbo.apache.org/dubbo-go/v3/registry/zookeeper"
)

// The application name the provider registers under (application-level
// discovery: /services/<name>/<host:port> in ZooKeeper).
const appName = "dubbogw-interop-provider"

func main() {
	zk := flag.String("zk", "", "ZooKeeper address to register in (none: no registry)")
	heartbeat := flag.String("heartbeat", "", "getty heartbeat period toward consumers (dubbo-go's default: 60s)")
	sessionTimeout := flag.String("session-timeout", "", "close a consumer connection silent this long (dubbo-go's default: 180s)")
	logLevel := flag.String("log-level", "error", "dubbo-go's log level")
	flag.Parse()

	if err := run(*zk, *heartbeat, *sessionTimeout, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "dubbogoprovider:", err)
		os.Exit(1)
	}
	// Serve until the test closes our standard input.
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func run(zk, heartbeat, sessionTimeout, logLevel string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	registerPOJOs()
	users, greeter := &UserService{}, &GreeterService{}
	config.SetProviderService(users)
	config.SetProviderService(greeter)

	gettyParams := map[string]any{}
	if heartbeat != "" {
		gettyParams["heartbeat-period"] = heartbeat
	}
	if sessionTimeout != "" {
		gettyParams["session-timeout"] = sessionTimeout
	}
	protocol := config.NewProtocolConfigBuilder().
		SetName("dubbo").
		SetIp("127.0.0.1").
		SetPort(strconv.Itoa(port)).
		Build()
	if len(gettyParams) > 0 {
		protocol.Params = gettyParams
	}

	provider := config.NewProviderConfigBuilder().
		AddService(users.Reference(), config.NewServiceConfigBuilder().
			SetInterface(userServiceName).
			SetVersion(userServiceVersion).
			SetProtocolIDs("dubbo").
			SetSerialization("hessian2").
			Build()).
		AddService(greeter.Reference(), config.NewServiceConfigBuilder().
			SetInterface(greeterServiceName).
			SetGroup(greeterGroup).
			SetProtocolIDs("dubbo").
			SetSerialization("hessian2").
			Build())

	// Metadata "remote": with the default ("local") dubbo-go v3.3.0 also
	// exports a MetadataService on the protocol's port without an IP, that
	// is on 0.0.0.0. Remote metadata goes to the registry instead (or
	// nowhere without one).
	root := config.NewRootConfigBuilder().
		SetApplication(config.NewApplicationConfigBuilder().
			SetName(appName).
			SetMetadataType("remote").
			Build()).
		AddProtocol("dubbo", protocol).
		SetLogger(&config.LoggerConfig{Level: logLevel, File: &config.File{}})

	if zk != "" {
		root.AddRegistry("zk", &config.RegistryConfig{
			Protocol: "zookeeper",
			Address:  zk,
			Timeout:  "10s",
			// "all": interface-level nodes (what dubbogw's ZooKeeper
			// registry reads) as well as the application-level instance
			// dubbo-go registers by default.
			RegistryType: "all",
		})
		provider.SetRegistryIDs("zk")
	} else {
		provider.SetRegister(false)
	}

	if err := config.Load(config.WithRootConfig(root.SetProvider(provider.Build()).Build())); err != nil {
		return fmt.Errorf("starting dubbo-go: %w", err)
	}
	fmt.Printf("ready 127.0.0.1:%d\n", port)
	return nil
}

// freePort asks the kernel for a free loopback port. dubbo-go does the
// same for a port of 0 (common.GetRandomPort), but then does not say which.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
