package mailtest

import (
	"bytes"
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
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Real is a private Dovecot 2.3 (IMAP with implicit TLS, LMTP, SASL for Postfix) and Postfix 3.7
// (SMTPS in wrapper mode and submission with STARTTLS, delivering to Dovecot over LMTP), started by
// the test from Debian's packages (dovecot-imapd, dovecot-lmtpd, postfix; `task mail-deps` installs
// them) with their own configuration, queue and mail in a temporary directory, on loopback high
// ports. Their certificate is signed by a CA the test makes (CAFile). The account is Addr with
// Password; mail to any address of acme.test is delivered to its INBOX.
type Real struct {
	Dir string
	// CAFile is the PEM of the CA that signed the servers' certificate (valid for 127.0.0.1 and
	// mail.acme.test): what LUCY_MAIL_CA_FILE names.
	CAFile string
	// IMAPSPort is Dovecot's IMAP with implicit TLS; SMTPSPort is Postfix's submission with implicit
	// TLS (smtpd_tls_wrappermode, the 465 way); SubmissionPort is Postfix's submission with STARTTLS
	// required before AUTH (the 587 way).
	IMAPSPort, SMTPSPort, SubmissionPort int
}

// SplitAddr is a second account of the real servers whose IMAP password is Password and whose SMTP
// password is SplitSMTPPassword: a mailbox connected with Password logs in to IMAP and is refused
// by SMTP.
const (
	SplitAddr         = "split@acme.test"
	SplitSMTPPassword = "another-smtp-token-51e0"
)

// StartReal starts the real servers, or skips the test with the reason they cannot run here.
func StartReal(t testing.TB) *Real {
	t.Helper()
	return startReal(t, "")
}

// StartRealOAuth is StartReal with Dovecot also accepting OAuth 2.0 bearer tokens, over SASL
// XOAUTH2 and OAUTHBEARER, for IMAP and for Postfix's SMTP AUTH (which asks Dovecot): Dovecot 2.3's
// oauth2 passdb (doc.dovecot.org/2.3/configuration_manual/authentication/oauth2/) validates each
// token at userinfoURL with the token as the bearer (introspection_mode = auth, as its Google and
// Microsoft examples do), and the account is the answer's "email" (username_attribute), which must
// be the user the client named.
func StartRealOAuth(t testing.TB, userinfoURL string) *Real {
	t.Helper()
	return startReal(t, userinfoURL)
}

func startReal(t testing.TB, userinfoURL string) *Real {
	t.Helper()
	dovecot, err := lookBin("dovecot")
	if err != nil {
		t.Skip("Dovecot is not installed (apt-get install dovecot-imapd dovecot-lmtpd, or `task mail-deps`): " + err.Error())
	}
	postfix, err := lookBin("postfix")
	if err != nil {
		t.Skip("Postfix is not installed (apt-get install postfix, or `task mail-deps`): " + err.Error())
	}
	if _, err := os.Stat("/usr/lib/dovecot/lmtp"); err != nil {
		t.Skip("Dovecot's LMTP server is not installed (apt-get install dovecot-lmtpd, or `task mail-deps`)")
	}
	if os.Geteuid() != 0 {
		// Postfix's master runs as root and drops to mail_owner (postfix(1), "postfix start").
		t.Skip("Postfix can only be started as root (postfix -c dir start); this test runs as uid " + strconv.Itoa(os.Geteuid()))
	}
	dir, err := os.MkdirTemp("", "lucy-realmail-")
	if err != nil {
		t.Fatal(err)
	}
	// Dovecot's login and auth processes run as its own users (dovenull, dovecot): they must reach
	// the run directory under this one.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Real{Dir: dir}
	t.Cleanup(func() {
		if os.Getenv("LUCY_KEEP_REALMAIL") == "" {
			_ = os.RemoveAll(dir)
		}
	})
	ports := freePorts(t, 5)
	r.IMAPSPort, r.SMTPSPort, r.SubmissionPort = ports[0], ports[1], ports[2]
	lmtpPort, authPort := ports[3], ports[4]
	cert, key := r.makeCerts(t)

	r.startDovecot(t, dovecot, cert, key, lmtpPort, authPort, userinfoURL)
	r.startPostfix(t, postfix, cert, key, lmtpPort, authPort)
	return r
}

func lookBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := "/usr/sbin/" + name
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is neither on PATH nor in /usr/sbin", name)
	}
	return p, nil
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return out
}

// makeCerts writes a CA (CAFile) and the servers' certificate and key, signed by it.
func (r *Real) makeCerts(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Lucy test mail CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "mail.acme.test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"mail.acme.test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	r.CAFile = filepath.Join(r.Dir, "ca.pem")
	certFile, keyFile = filepath.Join(r.Dir, "cert.pem"), filepath.Join(r.Dir, "key.pem")
	writeFile(t, r.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644)
	writeFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	// Read by Dovecot's master and Postfix's master as root, before they drop privileges.
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// startDovecot runs Dovecot in the foreground (dovecot -F) with a passwd-file passdb and userdb:
// the account's mail is a Maildir under the temporary directory, owned by nobody, which its mail
// processes run as (first_valid_uid admits it). Settings: doc.dovecot.org/2.3 (configuration
// manual: passwd-file, services' inet_listener, ssl_cert with "<").
func (r *Real) startDovecot(t testing.TB, bin, cert, key string, lmtpPort, authPort int, userinfoURL string) {
	t.Helper()
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody for Dovecot's mail processes: " + err.Error())
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	home := filepath.Join(r.Dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	// passwd-file: user:password:uid:gid::home (doc.dovecot.org/2.3/configuration_manual/authentication/passwd_file/).
	// The passdb's file is per service (%s: "imap", "smtp" for Postfix's SASL), so that SplitAddr
	// has one password for IMAP and another for SMTP.
	line := func(addr, pw string) string { return fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s\n", addr, pw, uid, gid, home) }
	writeFile(t, filepath.Join(r.Dir, "dovecot", "passwd.imap"), []byte(line(Addr, Password)+line(SplitAddr, Password)), 0o644)
	writeFile(t, filepath.Join(r.Dir, "dovecot", "passwd.smtp"), []byte(line(Addr, Password)+line(SplitAddr, SplitSMTPPassword)), 0o644)
	writeFile(t, filepath.Join(r.Dir, "dovecot", "users"), []byte(line(Addr, "-")+line(SplitAddr, "-")), 0o644)
	// The oauth2 passdb comes first and serves only the token mechanisms; passwords go on to the
	// passwd-file passdb.
	oauthMechs, oauthPassdb := "", ""
	if userinfoURL != "" {
		oauthMechs = " xoauth2 oauthbearer"
		ext := filepath.Join(r.Dir, "dovecot", "oauth2.conf.ext")
		writeFile(t, ext, []byte("introspection_mode = auth\nintrospection_url = "+userinfoURL+"\nusername_attribute = email\n"), 0o644)
		oauthPassdb = "passdb {\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n  args = " + ext + "\n}\n"
	}
	conf := fmt.Sprintf(`
base_dir = %[1]s/dovecot/run
state_dir = %[1]s/dovecot/state
log_path = %[1]s/dovecot/dovecot.log
instance_name = lucy-test-%[7]d
protocols = imap lmtp
listen = 127.0.0.1
first_valid_uid = %[8]d
last_valid_uid = %[8]d
disable_plaintext_auth = yes
auth_mechanisms = plain login%[9]s
ssl = required
ssl_cert = <%[2]s
ssl_key = <%[3]s
ssl_min_protocol = TLSv1.2
mail_location = maildir:~/Maildir
namespace inbox {
  inbox = yes
  mailbox Sent {
    special_use = \Sent
    auto = subscribe
  }
}
%[10]spassdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[1]s/dovecot/passwd.%%s
}
userdb {
  driver = passwd-file
  args = username_format=%%u %[1]s/dovecot/users
}
service imap-login {
  inet_listener imap {
    port = 0
  }
  inet_listener imaps {
    port = %[4]d
    ssl = yes
  }
}
service pop3-login {
  inet_listener pop3 {
    port = 0
  }
  inet_listener pop3s {
    port = 0
  }
}
service submission-login {
  inet_listener submission {
    port = 0
  }
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = %[5]d
  }
}
service auth {
  inet_listener auth-postfix {
    address = 127.0.0.1
    port = %[6]d
  }
}
protocol lmtp {
  auth_username_format = %%u
}
`, r.Dir, cert, key, r.IMAPSPort, lmtpPort, authPort, os.Getpid(), uid, oauthMechs, oauthPassdb)
	confFile := filepath.Join(r.Dir, "dovecot", "dovecot.conf")
	writeFile(t, confFile, []byte(conf), 0o644)
	cmd := exec.Command(bin, "-F", "-c", confFile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dovecot: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	if err := waitPort(r.IMAPSPort, done); err != nil {
		log, _ := os.ReadFile(filepath.Join(r.Dir, "dovecot", "dovecot.log"))
		t.Fatalf("dovecot did not listen on %d: %v\n%s\n%s", r.IMAPSPort, err, out.String(), log)
	}
}

// startPostfix starts a Postfix instance with its own config_directory and queue_directory
// (postfix -c dir start; postconf(5) for every parameter below): SMTPS in wrapper mode
// (smtpd_tls_wrappermode) and submission with STARTTLS required before AUTH (smtpd_tls_auth_only),
// both authenticating against Dovecot (smtpd_sasl_type = dovecot over inet) and relaying nothing
// but authenticated mail; acme.test is a virtual mailbox domain delivered to Dovecot over LMTP.
func (r *Real) startPostfix(t testing.TB, bin, cert, key string, lmtpPort, authPort int) {
	t.Helper()
	cfg := filepath.Join(r.Dir, "postfix")
	main := fmt.Sprintf(`compatibility_level = 3.6
config_directory = %[1]s
queue_directory = %[2]s/postfix-queue
data_directory = %[2]s/postfix-data
meta_directory = /etc/postfix
maillog_file = %[2]s/postfix.log
maillog_file_prefixes = %[2]s
myhostname = mail.acme.test
mydomain = acme.test
myorigin = acme.test
mydestination =
mynetworks = 127.0.0.0/8
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
smtp_host_lookup = native
lmtp_host_lookup = native
smtp_dns_support_level = disabled
virtual_mailbox_domains = acme.test
virtual_transport = lmtp:inet:127.0.0.1:%[3]d
smtpd_tls_cert_file = %[4]s
smtpd_tls_key_file = %[5]s
smtpd_tls_security_level = may
smtpd_sasl_type = dovecot
smtpd_sasl_path = inet:127.0.0.1:%[6]d
smtpd_relay_restrictions = permit_sasl_authenticated, reject
smtpd_recipient_restrictions = permit_sasl_authenticated, reject
biff = no
append_dot_mydomain = no
`, cfg, r.Dir, lmtpPort, cert, key, authPort)
	// master.cf: no chroot (the queue is not a chroot jail), the services a queue needs, and the two
	// submission listeners (master(5)).
	master := fmt.Sprintf(`127.0.0.1:%[1]d inet n - n - - smtpd
  -o syslog_name=postfix/smtps
  -o smtpd_tls_wrappermode=yes
  -o smtpd_sasl_auth_enable=yes
  -o smtpd_tls_security_level=encrypt
127.0.0.1:%[2]d inet n - n - - smtpd
  -o syslog_name=postfix/submission
  -o smtpd_tls_security_level=encrypt
  -o smtpd_tls_auth_only=yes
  -o smtpd_sasl_auth_enable=yes
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
tlsmgr    unix  -       -       n       1000?   1       tlsmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`, r.SMTPSPort, r.SubmissionPort)
	// postfix-script wants the queue directory to exist (root's); post-install makes what is inside.
	if err := os.MkdirAll(filepath.Join(r.Dir, "postfix-queue"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cfg, "main.cf"), []byte(main), 0o644)
	writeFile(t, filepath.Join(cfg, "master.cf"), []byte(master), 0o644)
	if out, err := exec.Command(bin, "-c", cfg, "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(r.Dir, "postfix.log"))
		t.Fatalf("postfix -c %s start: %v\n%s\n%s", cfg, err, out, log)
	}
	t.Cleanup(func() { _ = exec.Command(bin, "-c", cfg, "stop").Run() })
	for _, p := range []int{r.SMTPSPort, r.SubmissionPort} {
		if err := waitPort(p, nil); err != nil {
			log, _ := os.ReadFile(filepath.Join(r.Dir, "postfix.log"))
			t.Fatalf("postfix did not listen on %d: %v\n%s", p, err, log)
		}
	}
}

func waitPort(port int, died <-chan struct{}) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-died:
			return fmt.Errorf("the process ended")
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Logs returns the servers' logs, for a failing test to show.
func (r *Real) Logs() string {
	var b strings.Builder
	for _, f := range []string{"dovecot/dovecot.log", "postfix.log"} {
		data, _ := os.ReadFile(filepath.Join(r.Dir, f))
		fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
	}
	return b.String()
}
