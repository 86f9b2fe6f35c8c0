package interop

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbogw/dubbogw/internal/testcert"
)

// TestTLSDubboGoProvider calls a real dubbo-go v3.3.0 provider that
// serves the dubbo protocol over TLS (its tls_config: getty requires a
// client certificate, verified against the CA given) through the
// gateway, found in ZooKeeper:
//
//   - with dubbo.tls.enabled, every provider is dialed over TLS;
//   - without it, a provider whose URL says ssl-enabled=true (as Java
//     Dubbo registers a protocol with sslEnabled) is, and one whose URL
//     does not is dialed in plaintext, which the provider refuses;
//   - a gateway without a client certificate, or trusting another CA,
//     gets a JSON error, not a hang.
func TestTLSDubboGoProvider(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, conn := registryGroup(t, zkAddr, "tls")
	dir := t.TempDir()
	ca := testcert.NewCA(t, "dubbo providers")
	server := ca.Server(t, time.Time{}, "127.0.0.1")
	client := ca.Client(t, "dubbogw")
	other := testcert.NewCA(t, "someone else")
	file := func(name string, data []byte) string { return testcert.Write(t, dir, name, data) }
	caFile, otherCAFile := file("ca.pem", ca.PEM), file("other-ca.pem", other.PEM)
	certFile, keyFile := file("client.pem", client.CertPEM), file("client-key.pem", client.KeyPEM)

	p := startDubboGoProvider(t, providerConfig{
		ZK: zkAddr, RegistryGroup: group, RegistryType: "interface",
		TLSCert: file("server.pem", server.CertPEM), TLSKey: file("server-key.pem", server.KeyPEM), TLSCA: caFile,
	})

	// A second registry root holding the provider's URL with
	// ssl-enabled=true added: what a Java provider with sslEnabled
	// registers.
	sslGroup := group + "-ssl"
	t.Cleanup(func() { deleteTree(t, conn, "/"+sslGroup, 0) })
	registerWithSSL(t, conn, group, sslGroup, p.Addr)

	gw := func(t *testing.T, root, tls string) *gatewayUnderTest {
		t.Helper()
		top := ""
		if tls != "" {
			top = "dubbo: {tls: {" + tls + "}}\n"
		}
		return startGateway(t, appGW{zk: zkAddr, group: root, discovery: "interface", top: top}.yaml())
	}
	withCert := fmt.Sprintf("ca_file: %q, cert_file: %q, key_file: %q", caFile, certFile, keyFile)

	t.Run("enabled", func(t *testing.T) {
		g := gw(t, group, "enabled: true, "+withCert)
		for _, id := range []string{"7", "8", "9"} {
			wantJSON(userJSON(id))(t, g.do(t, "GET", "/users/"+id, ""))
		}
		wantJSON(userJSON("10"))(t, g.do(t, "POST", "/dubbo/"+userService+"/getUser",
			`{"types": ["java.lang.String"], "args": ["10"], "version": "1.0.0"}`))
	})

	t.Run("ssl-enabled in the URL", func(t *testing.T) {
		g := gw(t, sslGroup, withCert)
		wantJSON(userJSON("7"))(t, g.do(t, "GET", "/users/7", ""))
	})

	t.Run("plaintext to a TLS provider", func(t *testing.T) {
		g := gw(t, group, withCert) // the URL does not say TLS, and TLS is not enabled
		refused(t, g.do(t, "GET", "/users/7", ""))
	})

	t.Run("no client certificate", func(t *testing.T) {
		g := gw(t, group, fmt.Sprintf("enabled: true, ca_file: %q", caFile))
		refused(t, g.do(t, "GET", "/users/7", ""))
	})

	t.Run("another CA", func(t *testing.T) {
		g := gw(t, group, fmt.Sprintf("enabled: true, ca_file: %q, cert_file: %q, key_file: %q", otherCAFile, certFile, keyFile))
		refused(t, g.do(t, "GET", "/users/7", ""))
	})
}

// refused checks the gateway's answer to a call the provider could not
// take: a 5xx JSON error from the get-user route, within the client's
// deadline (the cause, which clients are not told, is in the log).
func refused(t *testing.T, a httpAnswer) {
	t.Helper()
	if a.status < 500 {
		t.Fatalf("status %d, want a 5xx error; body %s", a.status, a.body)
	}
	var e struct{ Error struct{ Code, Route string } }
	if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code == "" || e.Error.Route != "get-user" {
		t.Fatalf("body %s: want the gateway's JSON error of route get-user (%v)", a.body, err)
	}
}

// registerWithSSL copies the provider at addr's UserService URL from
// root from to root to, with ssl-enabled=true added.
func registerWithSSL(t *testing.T, conn *zk.Conn, from, to, addr string) {
	t.Helper()
	dir := "/" + from + "/" + userService + "/providers"
	var found string
	waitFor(t, 10*time.Second, "the provider's URL in "+dir, func() (bool, string) {
		children, _, err := conn.Children(dir)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range children {
			if raw, err := url.QueryUnescape(c); err == nil && strings.Contains(raw, "://"+addr+"/") {
				found = raw
				return true, ""
			}
		}
		return false, fmt.Sprintf("children %v", children)
	})
	u, err := url.Parse(found)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("ssl-enabled", "true")
	u.RawQuery = q.Encode()
	path := "/" + to + "/" + userService + "/providers"
	for _, p := range []string{"/" + to, "/" + to + "/" + userService, path} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(filepath.Join(path, url.QueryEscape(u.String())), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
