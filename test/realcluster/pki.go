package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one cluster: a CA, the API server's serving
// certificate signed by it, and the service-account signing key pair.
// Files live in <state>/pki and are reused when present, so a cluster
// restarted on the same --db keeps its kubeconfig and tokens valid.
type pki struct {
	dir                 string
	caCert, caKey       string
	serveCert, serveKey string
	saPub, saKey        string
	caPEM               []byte
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(k)
	return k, der, err
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still work.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// makePKI creates (or reuses) the key material under dir.
// allOrNone reports whether every file exists (true: reuse them), none
// does (false: create them), or only some do: an error naming dir, how
// many of what, and the remedy.
func allOrNone(dir string, files []string, what, remedy string) (bool, error) {
	have := 0
	for _, f := range files {
		if exists(f) {
			have++
		}
	}
	if have != 0 && have != len(files) {
		return false, fmt.Errorf("%s holds %d of the %d %s: %s to start afresh", dir, have, len(files), what, remedy)
	}
	return have == len(files), nil
}

// newCA makes a self-signed CA named cn with the given key usages, valid
// from an hour before now for ten years: the parsed certificate, its key,
// and both DER encodings (key, certificate).
func newCA(cn string, usage x509.KeyUsage, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte, error) {
	key, keyDER, err := newKey()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              usage,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return ca, key, keyDER, certDER, nil
}

// pemFile is one PEM file to write: its path, block type and contents.
type pemFile struct {
	path, typ string
	der       []byte
}

// writePEMs writes each file in order and stops at the first error.
func writePEMs(files []pemFile) error {
	for _, w := range files {
		if err := writePEM(w.path, w.typ, w.der); err != nil {
			return err
		}
	}
	return nil
}

func makePKI(dir string) (*pki, error) {
	p := &pki{
		dir:    dir,
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		serveCert: filepath.Join(dir, "apiserver.crt"), serveKey: filepath.Join(dir, "apiserver.key"),
		saPub: filepath.Join(dir, "sa.pub"), saKey: filepath.Join(dir, "sa.key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	all := []string{p.caCert, p.caKey, p.serveCert, p.serveKey, p.saPub, p.saKey}
	done, err := allOrNone(dir, all, "key files", "remove the directory")
	if err != nil {
		return nil, err
	}
	if done {
		b, err := os.ReadFile(p.caCert)
		if err != nil {
			return nil, err
		}
		p.caPEM = b
		return p, nil
	}

	now := time.Now()
	ca, caKey, caDER, caCertDER, err := newCA("aiq-realcluster-ca",
		x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature|x509.KeyUsageCRLSign, now)
	if err != nil {
		return nil, err
	}

	srvKey, srvDER, err := newKey()
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
	}
	srvCertDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}

	_, saDER, err := newKey()
	if err != nil {
		return nil, err
	}
	saParsed, err := x509.ParseECPrivateKey(saDER)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saParsed.PublicKey)
	if err != nil {
		return nil, err
	}

	if err := writePEMs([]pemFile{
		{p.caKey, "EC PRIVATE KEY", caDER},
		{p.caCert, "CERTIFICATE", caCertDER},
		{p.serveKey, "EC PRIVATE KEY", srvDER},
		{p.serveCert, "CERTIFICATE", srvCertDER},
		{p.saKey, "EC PRIVATE KEY", saDER},
		{p.saPub, "PUBLIC KEY", saPubDER},
	}); err != nil {
		return nil, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCertDER})
	return p, nil
}

// randomToken returns 32 hex digits from crypto/rand.
func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

var errNoPort = errors.New("no free port")

// freePort asks the kernel for a free TCP port on 127.0.0.1 and keeps it
// bound: the caller closes l once every port it needs is picked. Picked
// and closed one at a time, two ports could come out the same (it
// happened: kube-apiserver was given etcd's client port and failed with
// "address already in use"). The component that binds the port comes
// moments after the close.
func freePort() (int, net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errNoPort, err)
	}
	return l.Addr().(*net.TCPAddr).Port, l, nil
}

// frontProxy is the aggregation layer's key material: a CA of its own
// (kube-apiserver's --requestheader-client-ca-file, which an aggregated
// API server such as aiq-operator trusts) and the client certificate
// kube-apiserver presents when it proxies to one (--proxy-client-*).
// Files live beside the cluster's in <state>/pki and are reused.
type frontProxy struct {
	caCert, caKey         string
	clientCert, clientKey string
}

// frontProxyCN is the proxy client certificate's CN, the one name in
// --requestheader-allowed-names.
const frontProxyCN = "front-proxy-client"

// makeFrontProxy creates (or reuses) the front-proxy CA and client pair.
func makeFrontProxy(dir string) (*frontProxy, error) {
	f := &frontProxy{
		caCert: filepath.Join(dir, "front-proxy-ca.crt"), caKey: filepath.Join(dir, "front-proxy-ca.key"),
		clientCert: filepath.Join(dir, "front-proxy-client.crt"), clientKey: filepath.Join(dir, "front-proxy-client.key"),
	}
	all := []string{f.caCert, f.caKey, f.clientCert, f.clientKey}
	done, err := allOrNone(dir, all, "front-proxy key files", "remove them")
	if err != nil {
		return nil, err
	}
	if done {
		return f, nil
	}
	now := time.Now()
	ca, caKey, caDER, caCertDER, err := newCA("aiq-realcluster-front-proxy-ca",
		x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, now)
	if err != nil {
		return nil, err
	}
	clKey, clDER, err := newKey()
	if err != nil {
		return nil, err
	}
	clTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: frontProxyCN},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clCertDER, err := x509.CreateCertificate(rand.Reader, clTmpl, ca, &clKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if err := writePEMs([]pemFile{
		{f.caKey, "EC PRIVATE KEY", caDER},
		{f.caCert, "CERTIFICATE", caCertDER},
		{f.clientKey, "EC PRIVATE KEY", clDER},
		{f.clientCert, "CERTIFICATE", clCertDER},
	}); err != nil {
		return nil, err
	}
	return f, nil
}
