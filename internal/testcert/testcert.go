// Package testcert makes certificate authorities and certificates for
// tests: real X.509 (ECDSA P-256), written as PEM files where a
// configuration wants paths.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA's certificate.
	PEM []byte
}

// NewCA makes a self-signed CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// ClientConfig is a TLS client configuration trusting only the CA.
func (ca *CA) ClientConfig() *tls.Config { return &tls.Config{RootCAs: ca.Pool()} }

// MTLSServerConfig is a TLS server configuration presenting a certificate
// the CA issued for names and requiring a client certificate it issued.
func (ca *CA) MTLSServerConfig(t testing.TB, names ...string) *tls.Config {
	t.Helper()
	return &tls.Config{Certificates: []tls.Certificate{ca.Server(t, time.Time{}, names...).Pair(t)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
}

// Leaf is a certificate the CA issued, with its key, as PEM.
type Leaf struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
}

// Pair is the leaf as crypto/tls takes it.
func (l Leaf) Pair(t testing.TB) tls.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// Server issues a server certificate for names (DNS names or IP
// addresses), valid until notAfter (zero: a day).
func (ca *CA) Server(t testing.TB, notAfter time.Time, names ...string) Leaf {
	t.Helper()
	return ca.issue(t, names[0], names, x509.ExtKeyUsageServerAuth, notAfter)
}

// Client issues a client certificate whose subject's common name is cn.
func (ca *CA) Client(t testing.TB, cn string) Leaf {
	t.Helper()
	return ca.issue(t, cn, nil, x509.ExtKeyUsageClientAuth, time.Time{})
}

func (ca *CA) issue(t testing.TB, cn string, names []string, usage x509.ExtKeyUsage, notAfter time.Time) Leaf {
	t.Helper()
	if notAfter.IsZero() {
		notAfter = time.Now().Add(24 * time.Hour)
	}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"dubbogw tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Leaf{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		Cert:    cert,
	}
}

// Write writes data to dir/name and returns the path.
func Write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	// Written aside and renamed into place, as a rotation is deployed (a
	// Kubernetes Secret swaps a symlink): a reader polling the file, as
	// the TLS listener's reload check does, never sees it half written
	// (os.WriteFile truncates first: a check between the truncation and
	// the write saw a torn file, a second "bad pair" to count).
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
