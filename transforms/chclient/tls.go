package chclient

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// tlsConfig builds the TLS configuration of a connection: the one configuration of both
// protocols, the native one (clickhouse://host:9440?secure=true) and HTTP (https://), which
// clickhouse-go's native dialer (tls.DialWithDialer) and its HTTP transport both take from
// Options.TLS. base is what the URL gives (tls_server_name); ca, cert and key are the PEM
// contents of clickHouseCaCertificate, clickHouseClientCertificate and clickHouseClientKey, nil
// when unset.
//
//   - The server's certificate is always verified (InsecureSkipVerify is never set, and the URL
//     option skip_verify is refused): against the certificates of ca when given, and only
//     them, else against the system's roots.
//   - The name verified is tls_server_name when the URL gives it, else each host of the URL:
//     the server name is left empty, so that Go's TLS dialer and HTTP transport take it from
//     the address they dial, host by host when the URL lists several.
//   - The client certificate and key, when given, are presented to a server that asks for one
//     (mutual TLS); a key that does not match the certificate, and a certificate outside its
//     validity period, are refused here rather than by the server. asked is set when a server
//     asks for a client certificate: a server that requires one and is given none closes the
//     connection after the handshake (ClickHouse 18.16 does so without a TLS alert), which
//     asked tells from other failures.
//   - TLS 1.2 at least.
//
// Errors are *ConfigError naming the field to fix; none holds the key.
func tlsConfig(base *tls.Config, ca, cert, key []byte) (c *tls.Config, asked *atomic.Bool, err error) {
	c = &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		c.ServerName = base.ServerName
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, nil, &ConfigError{FieldCACertificate, Hintf("holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"): give the certificate of the authority that signs the server's certificate"), errNoPEM}
		}
		c.RootCAs = pool
	}
	switch {
	case cert != nil && key != nil:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, nil, keyPairError(cert, key, err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return nil, nil, &ConfigError{FieldClientCertificate, Hintf("is not a certificate that Go can read"), err}
		}
		if now := time.Now(); now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
			return nil, nil, &ConfigError{FieldClientCertificate, Hintf("is valid from %s to %s, not now: give a current certificate",
				leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339)), errors.New("outside its validity period")}
		}
		if !forClients(leaf) {
			return nil, nil, &ConfigError{FieldClientCertificate, Hintf("is a certificate for %s, not for TLS clients (its extended key usage does not list clientAuth), "+
				"which a server that checks client certificates refuses (RFC 5280, 4.2.1.12): give a client certificate (extendedKeyUsage = clientAuth)", extKeyUsages(leaf)),
				errors.New("not for client authentication")}
		}
		c.Certificates = []tls.Certificate{pair}
	case cert != nil:
		return nil, nil, &ConfigError{FieldClientKey, Hintf("is unset, but %s is set: give both, or neither", FieldClientCertificate), errors.New("no key")}
	case key != nil:
		return nil, nil, &ConfigError{FieldClientCertificate, Hintf("is unset, but %s is set: give both, or neither", FieldClientKey), errors.New("no certificate")}
	}
	asked = new(atomic.Bool)
	certs := c.Certificates
	c.Certificates = nil
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked.Store(true)
		if len(certs) == 0 {
			return &tls.Certificate{}, nil // none: the server decides whether it needs one
		}
		return &certs[0], nil
	}
	if c.InsecureSkipVerify {
		panic("chclient: certificate verification is never turned off")
	}
	return c, asked, nil
}

var errNoPEM = errors.New("no PEM block")

// keyPairError explains why tls.X509KeyPair refused the client certificate and key, naming the
// one to fix.
func keyPairError(cert, key []byte, err error) error {
	if b, _ := pem.Decode(cert); b == nil || b.Type != "CERTIFICATE" {
		return &ConfigError{FieldClientCertificate, Hintf("holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")"), err}
	}
	if b, _ := pem.Decode(key); b == nil {
		return &ConfigError{FieldClientKey, Hintf("holds no PEM private key (\"-----BEGIN PRIVATE KEY-----\", or an RSA or EC key)"), err}
	}
	return &ConfigError{FieldClientKey, Hintf("is not the private key of %s, or not one Go can read: give the key the certificate was issued for", FieldClientCertificate), err}
}

// UsesTLS reports whether clickHouseUrl raw asks for TLS: https://, or clickhouse:// with
// secure=true. A URL that breaks its rules (URLRule) does not.
func UsesTLS(raw string) bool {
	o, err := parseURL(Config{URL: raw})
	return err == nil && o.TLS != nil
}

// forClients reports whether leaf may authenticate a TLS client: it lists no extended key usage
// (any use), or lists clientAuth or anyExtendedKeyUsage (RFC 5280, 4.2.1.12).
func forClients(leaf *x509.Certificate) bool {
	if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 {
		return true
	}
	return slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) || slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny)
}

// extKeyUsages names the extended key usages leaf lists, as "server authentication".
func extKeyUsages(leaf *x509.Certificate) string {
	names := map[x509.ExtKeyUsage]string{
		x509.ExtKeyUsageServerAuth: "server authentication (serverAuth)", x509.ExtKeyUsageCodeSigning: "code signing",
		x509.ExtKeyUsageEmailProtection: "email protection", x509.ExtKeyUsageTimeStamping: "time stamping", x509.ExtKeyUsageOCSPSigning: "OCSP signing",
	}
	var out []string
	for _, u := range leaf.ExtKeyUsage {
		out = append(out, cmp.Or(names[u], fmt.Sprintf("extended key usage %d", u)))
	}
	for _, oid := range leaf.UnknownExtKeyUsage {
		out = append(out, oid.String())
	}
	return strings.Join(out, ", ")
}
