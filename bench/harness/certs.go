package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// benchCerts are the files of the HTTPS rows: a private CA and one
// server certificate for 127.0.0.1 signed by it, which the gateway and
// nginx both serve (same key type and size: ECDSA P-256).
type benchCerts struct {
	caFile, certFile, keyFile string
}

// writeBenchCerts makes a CA and a server certificate for 127.0.0.1 in
// dir.
func writeBenchCerts(dir string) (*benchCerts, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the bench CA's key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dubbogw bench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("making the bench CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("reading the bench CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the bench server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("making the bench server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the bench server key: %w", err)
	}
	c := &benchCerts{
		caFile:   filepath.Join(dir, "bench-ca.pem"),
		certFile: filepath.Join(dir, "bench-cert.pem"),
		keyFile:  filepath.Join(dir, "bench-key.pem"),
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
		mode      os.FileMode
	}{
		{c.caFile, "CERTIFICATE", caDER, 0o644},
		{c.certFile, "CERTIFICATE", der, 0o644},
		{c.keyFile, "PRIVATE KEY", keyDER, 0o600},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return c, nil
}

// pool is the CA as a certificate pool, for the harness's clients.
func (c *benchCerts) pool() (*x509.CertPool, error) {
	pemBytes, err := os.ReadFile(c.caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the bench CA: %w", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("%s holds no certificate", c.caFile)
	}
	return p, nil
}
