// Command dubbogoprovider is a real Apache dubbo-go v3.3.0 provider for
// dubbogw's interop tests and benchmarks (test/interop): the services of
// service.go over the dubbo protocol with hessian2, bound to 127.0.0.1,
// optionally registered in ZooKeeper.
//
// It prints "ready 127.0.0.1:<port>" on stdout once the services are
// exported (and registered) and exits when its standard input closes, so
// it never outlives the test that started it.
//
//	dubbogoprovider [-zk 127.0.0.1:2181] [-heartbeat 500ms -session-timeout 2s]
//	    [-registry-type interface|service|all] [-registry-group G]
//	    [-metadata local|remote] [-app NAME]
//	    [-user-version V] [-user-group G] [-extra-method] [-port N]
//	    [-tls-cert F -tls-key F [-tls-ca F]] [-tri [-tri-port N]]
//
// Registration (-zk): -registry-type "interface" writes the interface-level
// nodes /dubbo/<interface>/providers/<url>; "service" (dubbo-go's own
// default) only the application-level ones: the instance
// /services/<app>/<ip:port> and the mapping /dubbo/mapping/<interface>;
// "all" (the default here) both. A registry group G replaces both roots:
// /G/<interface>/providers, /G/<app>/<ip:port> and /G/mapping/<interface>.
//
// Metadata: "remote" (the default here) publishes the application's
// MetadataInfo in ZooKeeper (/dubbo/<app>/<revision>, /G/... with a
// registry group). "local" (dubbo-go's own default) serves it instead from
// org.apache.dubbo.metadata.MetadataService (group <app>, version 1.0.0,
// method getMetadataInfo(String revision)) over the dubbo protocol.
// dubbo-go exports that service on a URL without an IP, that is on
// 0.0.0.0, and by default on the protocol's port, where the bind fails
// when the protocol is bound to 127.0.0.1 (the export's panic is
// recovered and the instance loses its dubbo.metadata-service.url-params).
// So with -metadata local this command exports the MetadataService
// itself, on the same 127.0.0.1 server as the services, with the URL
// dubbo-go would have used, and writes the
// dubbo.metadata-service.url-params dubbo-go would have written. (dubbo-go's
// own export, with application metadata-service-port set to another port,
// would listen on 0.0.0.0.)
//
// -tri also exports both services over Triple (HTTP/2, h2c; non-IDL:
// hessian2 arguments in Triple's wrapper messages) on -tri-port (0: a free
// one), registered beside the dubbo URL; the ready line then ends with
// " tri 127.0.0.1:<port>". dubbo-go serves them under the Go method
// names (/org.dubbogw.interop.UserService/GetUser), as a non-IDL dubbo-go
// service does. It also exports the IDL (protobuf) service of idl.go,
// org.dubbogw.idl.Greeter, over Triple only; -idl-descriptor-out writes
// its descriptor set.
//
// -extra-method adds UserService.ping() (returns "pong"), which changes
// the metadata revision; -port keeps the address across restarts.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "dubbo.apache.org/dubbo-go/v3/cluster/cluster/failover"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/common/extension"
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
	"dubbo.apache.org/dubbo-go/v3/metadata"
	"dubbo.apache.org/dubbo-go/v3/metadata/info"
	_ "dubbo.apache.org/dubbo-go/v3/metadata/mapping/metadata"
	_ "dubbo.apache.org/dubbo-go/v3/metadata/report/zookeeper"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/dubbo"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/triple"
	_ "dubbo.apache.org/dubbo-go/v3/proxy/proxy_factory"
	"dubbo.apache.org/dubbo-go/v3/registry"
	_ "dubbo.apache.org/dubbo-go/v3/registry/protocol"
	_ "dubbo.apache.org/dubbo-go/v3/registry/servicediscovery"
	_ "dubbo.apache.org/dubbo-go/v3/registry/zookeeper"
)

// The default application name the provider registers under
// (application-level discovery: /services/<name>/<host:port> in ZooKeeper).
const appName = "dubbogw-interop-provider"

// options are the command's flags.
type options struct {
	zk, heartbeat, sessionTimeout, logLevel string
	registryType, registryGroup             string
	metadataType                            string
	app                                     string
	userVersion, userGroup                  string
	extraMethod                             bool
	port                                    int
	tlsCert, tlsKey, tlsCA                  string
	tri                                     bool
	triPort                                 int
	idlDescriptorOut                        string
	tag                                     string
}

func main() {
	var o options
	flag.StringVar(&o.zk, "zk", "", "ZooKeeper address to register in (none: no registry)")
	flag.StringVar(&o.heartbeat, "heartbeat", "", "getty heartbeat period toward consumers (dubbo-go's default: 60s)")
	flag.StringVar(&o.sessionTimeout, "session-timeout", "", "close a consumer connection silent this long (dubbo-go's default: 180s)")
	flag.StringVar(&o.logLevel, "log-level", "error", "dubbo-go's log level")
	flag.StringVar(&o.registryType, "registry-type", "all", "registration with -zk: interface, service (application level) or all")
	flag.StringVar(&o.registryGroup, "registry-group", "", "registry group: the ZooKeeper root instead of /dubbo and /services")
	flag.StringVar(&o.metadataType, "metadata", "remote", "metadata storage: local (a MetadataService on 127.0.0.1:<port>) or remote (ZooKeeper)")
	flag.StringVar(&o.app, "app", appName, "application name")
	flag.StringVar(&o.userVersion, "user-version", userServiceVersion, "UserService's version")
	flag.StringVar(&o.userGroup, "user-group", "", "UserService's group")
	flag.StringVar(&o.tag, "tag", "", "UserService's static tag (ServiceConfig.Tag: the dubbo.tag parameter of its URL)")
	flag.BoolVar(&o.extraMethod, "extra-method", false, "UserService also exposes ping(), which changes the metadata revision")
	flag.IntVar(&o.port, "port", 0, "port on 127.0.0.1 (0: a free one)")
	flag.StringVar(&o.tlsCert, "tls-cert", "", "serve over TLS with this certificate (PEM; with -tls-key): dubbo-go's tls_config")
	flag.StringVar(&o.tlsKey, "tls-key", "", "the certificate's key (PEM)")
	flag.StringVar(&o.tlsCA, "tls-ca", "", "CA certificates (PEM) a consumer's certificate is verified against")
	flag.BoolVar(&o.tri, "tri", false, "also export the services over Triple (h2c)")
	flag.IntVar(&o.triPort, "tri-port", 0, "the Triple port on 127.0.0.1 with -tri (0: a free one)")
	flag.StringVar(&o.idlDescriptorOut, "idl-descriptor-out", "", "with -tri, write the IDL service's FileDescriptorSet here (as protoc --descriptor_set_out)")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "dubbogoprovider:", err)
		os.Exit(1)
	}
	// Serve until the test closes our standard input.
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func run(o options) error {
	switch o.registryType {
	case constant.RegistryTypeInterface, constant.RegistryTypeService, constant.RegistryTypeAll:
	default:
		return fmt.Errorf("-registry-type %q: want interface, service or all", o.registryType)
	}
	switch o.metadataType {
	case constant.DefaultMetadataStorageType, constant.RemoteMetadataStorageType:
	default:
		return fmt.Errorf("-metadata %q: want local or remote", o.metadataType)
	}
	port := o.port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return err
		}
	}
	registerPOJOs()
	var users interface{ Reference() string } = &UserService{}
	if o.extraMethod {
		users = &UserServiceWithPing{}
	}
	greeter := &GreeterService{}
	config.SetProviderService(users)
	config.SetProviderService(greeter)

	gettyParams := map[string]any{}
	if o.heartbeat != "" {
		gettyParams["heartbeat-period"] = o.heartbeat
	}
	if o.sessionTimeout != "" {
		gettyParams["session-timeout"] = o.sessionTimeout
	}
	protocol := config.NewProtocolConfigBuilder().
		SetName("dubbo").
		SetIp("127.0.0.1").
		SetPort(strconv.Itoa(port)).
		Build()
	if len(gettyParams) > 0 {
		protocol.Params = gettyParams
	}

	protocolIDs := []string{"dubbo"}
	triPort := o.triPort
	if o.tri {
		protocolIDs = append(protocolIDs, "tri")
		if triPort == 0 {
			var err error
			if triPort, err = freePort(); err != nil {
				return err
			}
		}
	}
	var idl *IDLGreeter
	if o.tri {
		g, info, err := registerIDL(o.idlDescriptorOut)
		if err != nil {
			return err
		}
		idl = g
		config.SetProviderServiceWithInfo(idl, info)
	}
	userConfig := config.NewServiceConfigBuilder().
		SetInterface(userServiceName).
		SetVersion(o.userVersion).
		SetGroup(o.userGroup).
		SetProtocolIDs(protocolIDs...).
		SetSerialization("hessian2").
		Build()
	userConfig.Tag = o.tag // the builder has no setter
	provider := config.NewProviderConfigBuilder().
		AddService(users.Reference(), userConfig).
		AddService(greeter.Reference(), config.NewServiceConfigBuilder().
			SetInterface(greeterServiceName).
			SetGroup(greeterGroup).
			SetProtocolIDs(protocolIDs...).
			SetSerialization("hessian2").
			Build())

	if idl != nil {
		provider.AddService(idl.Reference(), config.NewServiceConfigBuilder().
			SetInterface(idlService).
			SetProtocolIDs("tri").
			SetSerialization("protobuf").
			Build())
	}

	application := config.NewApplicationConfigBuilder().
		SetName(o.app).
		SetMetadataType(o.metadataType)
	var ms *loopbackMetadataService
	if o.metadataType == constant.DefaultMetadataStorageType {
		ms = &loopbackMetadataService{app: o.app, port: port}
		// Use up dubbo-go's once-only MetadataService export with a
		// "remote" type, which exports nothing; config.Load's own
		// metadata options ("local") then only set the storage type the
		// instance advertises.
		if err := metadata.NewOptions(metadata.WithMetadataType(constant.RemoteMetadataStorageType)).Init(); err != nil {
			return fmt.Errorf("disabling dubbo-go's MetadataService export: %w", err)
		}
		extension.AddCustomizers(ms)
	}
	root := config.NewRootConfigBuilder().
		SetApplication(application.Build()).
		AddProtocol("dubbo", protocol).
		SetLogger(&config.LoggerConfig{Level: o.logLevel, File: &config.File{}})
	if o.tri {
		root.AddProtocol("tri", config.NewProtocolConfigBuilder().
			SetName("tri").
			SetIp("127.0.0.1").
			SetPort(strconv.Itoa(triPort)).
			Build())
	}

	if o.tlsCert != "" {
		// getty then serves TLS and requires a client certificate
		// (RequireAnyClientCert), verified against -tls-ca when given.
		// The registered URL does not say so: dubbo-go 3.3.0 leaves its
		// ssl-enabled parameter commented out.
		root.SetTLSConfig(&config.TLSConfig{TLSCertFile: o.tlsCert, TLSKeyFile: o.tlsKey, CACertFile: o.tlsCA})
	}
	if o.zk != "" {
		root.AddRegistry("zk", &config.RegistryConfig{
			Protocol:     "zookeeper",
			Address:      o.zk,
			Timeout:      "10s",
			Group:        o.registryGroup,
			RegistryType: o.registryType,
		})
		provider.SetRegistryIDs("zk")
	} else {
		provider.SetRegister(false)
	}

	if err := config.Load(config.WithRootConfig(root.SetProvider(provider.Build()).Build())); err != nil {
		return fmt.Errorf("starting dubbo-go: %w", err)
	}
	if ms != nil {
		// Without an application-level registration no instance was
		// customized: export it now.
		if err := ms.export(); err != nil {
			return err
		}
	}
	if o.tri {
		// dubbo-go starts the Triple server on a goroutine of its own
		// after the export: wait until it accepts.
		if err := waitListening(fmt.Sprintf("127.0.0.1:%d", triPort), 30*time.Second); err != nil {
			return fmt.Errorf("the Triple server: %w", err)
		}
		fmt.Printf("ready 127.0.0.1:%d tri 127.0.0.1:%d\n", port, triPort)
	} else {
		fmt.Printf("ready 127.0.0.1:%d\n", port)
	}
	return nil
}

// waitListening waits until addr accepts a connection.
func waitListening(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %v: %w", addr, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loopbackMetadataService exports dubbo-go's MetadataService on the
// protocol's 127.0.0.1 server, as dubbo-go's metadata package does
// (metadata/metadata_service.go, exportDubbo) except for the IP. It is an
// instance customizer so the export happens after the services' server
// started (it takes the getty configuration of the protocol) and before
// the instance is registered, and so it can add the instance's
// dubbo.metadata-service.url-params, which dubbo-go's own customizer
// (registry/servicediscovery/customizer) only writes for its own export.
type loopbackMetadataService struct {
	app  string
	port int

	once sync.Once
	url  *common.URL
	err  error
}

// GetPriority implements registry.ServiceInstanceCustomizer.
func (*loopbackMetadataService) GetPriority() int { return 0 }

// Customize implements registry.ServiceInstanceCustomizer.
func (m *loopbackMetadataService) Customize(instance registry.ServiceInstance) {
	if err := m.export(); err != nil {
		fmt.Fprintln(os.Stderr, "dubbogoprovider:", err)
		return
	}
	// As dubbo-go's metadataServiceURLParamsMetadataCustomizer.convertToParams.
	params := map[string]string{}
	for k, v := range m.url.GetParams() {
		if info.IncludeKeys.Contains(k) && len(v) > 0 && v[0] != "" {
			params[k] = v[0]
		}
	}
	params[constant.PortKey] = m.url.Port
	params[constant.ProtocolKey] = m.url.Protocol
	js, err := json.Marshal(params)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dubbogoprovider:", err)
		return
	}
	instance.GetMetadata()[constant.MetadataServiceURLParamsPropertyName] = string(js)
}

func (m *loopbackMetadataService) export() error {
	m.once.Do(func() {
		svc := metadata.GetMetadataService()
		version, _ := svc.Version()
		u := common.NewURLWithOptions(
			common.WithPath(constant.MetadataServiceName),
			common.WithProtocol(constant.DefaultProtocol),
			common.WithIp("127.0.0.1"),
			common.WithPort(strconv.Itoa(m.port)),
			common.WithParamsValue(constant.GroupKey, m.app),
			common.WithParamsValue(constant.SerializationKey, constant.Hessian2Serialization),
			common.WithParamsValue(constant.ReleaseKey, constant.Version),
			common.WithParamsValue(constant.VersionKey, version),
			common.WithParamsValue(constant.InterfaceKey, constant.MetadataServiceName),
			common.WithParamsValue(constant.BeanNameKey, constant.SimpleMetadataServiceName),
			common.WithParamsValue(constant.MetadataTypeKey, constant.DefaultMetadataStorageType),
			common.WithParamsValue(constant.SideKey, constant.SideProvider),
		)
		methods, err := common.ServiceMap.Register(u.Interface(), u.Protocol, u.Group(), u.Version(), svc)
		if err != nil {
			m.err = fmt.Errorf("exporting the MetadataService: %w", err)
			return
		}
		u.Methods = strings.Split(methods, ",")
		proto := extension.GetProtocol(u.Protocol)
		if proto == nil {
			m.err = errors.New("exporting the MetadataService: no dubbo protocol")
			return
		}
		proto.Export(extension.GetProxyFactory("").GetInvoker(u))
		m.url = u
	})
	return m.err
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
