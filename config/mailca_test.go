package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// LUCY_MAIL_CA_FILE: a PEM CA is added to the roots mail servers' certificates are verified with,
// and a missing file or one without a certificate stops the start with what to fix.
func TestMailCAFile(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Acme mail CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	dir := t.TempDir()
	good := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(bad, []byte("the CA is on the wiki"), 0o644); err != nil {
		t.Fatal(err)
	}

	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k"))
	if err != nil || c.MailRootCAs != nil {
		t.Fatalf("unset: %v, roots %v; want the system's (nil)", err, c.MailRootCAs)
	}
	c, err = Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAIL_CA_FILE", good))
	if err != nil {
		t.Fatal(err)
	}
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafDER, _ := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), DNSNames: []string{"mail.acme.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		ca, &leafKey.PublicKey, key)
	leaf, _ := x509.ParseCertificate(leafDER)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: c.MailRootCAs, DNSName: "mail.acme.test"}); err != nil {
		t.Errorf("a certificate the CA signed does not verify with LUCY_MAIL_CA_FILE's roots: %v", err)
	}
	if c.Redacted()["mailCAFile"] != good {
		t.Errorf("Redacted does not show the CA file: %v", c.Redacted())
	}
	for _, tt := range []struct{ file, want string }{
		{filepath.Join(dir, "missing.pem"), "no such file"},
		{bad, "holds no PEM certificate"},
	} {
		_, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAIL_CA_FILE", tt.file))
		if err == nil || !strings.Contains(err.Error(), "LUCY_MAIL_CA_FILE") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LUCY_MAIL_CA_FILE=%s: %v; want an error saying %q", tt.file, err, tt.want)
		}
	}
}
