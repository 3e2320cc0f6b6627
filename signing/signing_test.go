package signing

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func testKey(t *testing.T) Key {
	t.Helper()
	k, err := FromSecret("0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var (
	msg = Message{Team: "T1", Channel: "C1", TS: "1700000000.000300", User: "U1", Text: "yes, do it"}
	apr = Approval{Lane: "lane:T1:C1:1700000000.000100", Fingerprint: "0a1b2c3d4e5f6071", User: "U1", Approved: true}
)

func TestMessageRoundTrip(t *testing.T) {
	k := testKey(t)
	sig := k.SignMessage(msg)
	if !strings.HasPrefix(sig, "v1:") {
		t.Fatalf("sig = %q, want the v1: prefix", sig)
	}
	if err := k.VerifyMessage(msg, sig); err != nil {
		t.Fatalf("VerifyMessage = %v, want nil", err)
	}
	if again := k.SignMessage(msg); again != sig {
		t.Fatalf("signing is not deterministic: %q then %q", sig, again)
	}
}

func TestMessageTampering(t *testing.T) {
	k := testKey(t)
	sig := k.SignMessage(msg)
	for name, change := range map[string]func(*Message){
		"team":       func(m *Message) { m.Team = "T2" },
		"channel":    func(m *Message) { m.Channel = "C2" },
		"ts":         func(m *Message) { m.TS = "1700000000.000301" },
		"user":       func(m *Message) { m.User = "U2" },
		"text":       func(m *Message) { m.Text = "yes, do it!" },
		"empty text": func(m *Message) { m.Text = "" },
	} {
		t.Run(name, func(t *testing.T) {
			m := msg
			change(&m)
			if err := k.VerifyMessage(m, sig); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("VerifyMessage(%+v) = %v, want ErrBadSignature", m, err)
			}
		})
	}
}

func TestApprovalTampering(t *testing.T) {
	k := testKey(t)
	sig := k.SignApproval(apr)
	if err := k.VerifyApproval(apr, sig); err != nil {
		t.Fatalf("VerifyApproval = %v, want nil", err)
	}
	for name, change := range map[string]func(*Approval){
		"lane":        func(a *Approval) { a.Lane = "lane:T1:C1:1700000000.000200" },
		"fingerprint": func(a *Approval) { a.Fingerprint = "0a1b2c3d4e5f6072" },
		"user":        func(a *Approval) { a.User = "U2" },
		"decision":    func(a *Approval) { a.Approved = false },
	} {
		t.Run(name, func(t *testing.T) {
			a := apr
			change(&a)
			if err := k.VerifyApproval(a, sig); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("VerifyApproval(%+v) = %v, want ErrBadSignature", a, err)
			}
		})
	}
}

// Fields are length-prefixed: moving bytes from one field to the next must change the signature.
func TestNoAmbiguousConcatenation(t *testing.T) {
	k := testKey(t)
	a := Message{Team: "T1", Channel: "C1", TS: "1", User: "U1", Text: "yes"}
	b := Message{Team: "T1C", Channel: "1", TS: "1", User: "U1", Text: "yes"}
	if err := k.VerifyMessage(b, k.SignMessage(a)); err == nil {
		t.Fatal("a signature verified for differently split fields")
	}
	c := Approval{Lane: "lane:x", Fingerprint: "fp", User: "U1"}
	d := Approval{Lane: "lane:xf", Fingerprint: "p", User: "U1"}
	if err := k.VerifyApproval(d, k.SignApproval(c)); err == nil {
		t.Fatal("an approval signature verified for differently split fields")
	}
}

// The domain label keeps a signature for one kind of input from passing for another, even when the
// fields line up.
func TestDomainSeparation(t *testing.T) {
	k := testKey(t)
	// A message whose fields are the approval's: lane, fingerprint, user, "approved", "".
	m := Message{Team: apr.Lane, Channel: apr.Fingerprint, TS: apr.User, User: "approved"}
	if err := k.VerifyApproval(apr, k.SignMessage(m)); err == nil {
		t.Fatal("a message signature verified as an approval")
	}
	if err := k.VerifyMessage(m, k.SignApproval(apr)); err == nil {
		t.Fatal("an approval signature verified as a message")
	}
}

func TestWrongKeyAndBadSignatures(t *testing.T) {
	k := testKey(t)
	other, err := FromSecret("fedcba9876543210fedcba9876543210")
	if err != nil {
		t.Fatal(err)
	}
	sig := k.SignMessage(msg)
	valid := sig[len("v1:"):]
	tests := []struct {
		name string
		key  Key
		sig  string
		want error
	}{
		{"wrong key", other, sig, ErrBadSignature},
		{"empty", k, "", ErrUnsigned},
		{"no version", k, valid, ErrUnknownVersion},
		{"future version", k, "v2:" + valid, ErrUnknownVersion},
		{"not base64", k, "v1:***", ErrBadSignature},
		{"truncated", k, sig[:len(sig)-4], ErrBadSignature},
		{"empty mac", k, "v1:", ErrBadSignature},
		{"flipped char", k, sig[:len(sig)-1] + flip(sig[len(sig)-1]), ErrBadSignature},
		{"zero key", Key{}, sig, ErrNoKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.key.VerifyMessage(msg, tc.sig); !errors.Is(err, tc.want) {
				t.Fatalf("VerifyMessage = %v, want %v", err, tc.want)
			}
		})
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// The zero Key must not sign: an empty HMAC key is known to everyone, so its signatures would vouch
// for nothing.
func TestZeroKeySignsNothing(t *testing.T) {
	var k Key
	if !k.IsZero() {
		t.Fatal("zero Key is not IsZero")
	}
	if s := k.SignMessage(msg); s != "" {
		t.Fatalf("zero key signed a message: %q", s)
	}
	if s := k.SignApproval(apr); s != "" {
		t.Fatalf("zero key signed an approval: %q", s)
	}
	if err := k.VerifyApproval(apr, testKey(t).SignApproval(apr)); !errors.Is(err, ErrNoKey) {
		t.Fatalf("zero key verify = %v, want ErrNoKey", err)
	}
}

func TestFromSecret(t *testing.T) {
	if _, err := FromSecret(strings.Repeat("x", 31)); err == nil {
		t.Fatal("31 characters accepted")
	}
	// Characters, not bytes: 31 two-byte runes are still too short.
	if _, err := FromSecret(strings.Repeat("é", 31)); err == nil {
		t.Fatal("31 multi-byte characters accepted")
	}
	if _, err := FromSecret(strings.Repeat("x", 32)); err != nil {
		t.Fatalf("32 characters refused: %v", err)
	}
}

func TestFromBotToken(t *testing.T) {
	a, b := FromBotToken("xoxb-1-abc"), FromBotToken("xoxb-1-abc")
	if a.IsZero() || !a.Equal(b) {
		t.Fatal("derivation is not deterministic")
	}
	if a.Equal(FromBotToken("xoxb-1-abd")) {
		t.Fatal("different tokens derived the same key")
	}
	if err := b.VerifyMessage(msg, a.SignMessage(msg)); err != nil {
		t.Fatalf("gateway and worker with the same token disagree: %v", err)
	}
	// The key is not the token: a signature by the token used as a plain secret does not verify.
	raw := Key{b: []byte("xoxb-1-abc")}
	if err := a.VerifyMessage(msg, raw.SignMessage(msg)); err == nil {
		t.Fatal("the derived key is the token itself")
	}
	if !FromBotToken("").IsZero() {
		t.Fatal("an empty token derived a key")
	}
}

func TestNewSecret(t *testing.T) {
	s1, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := NewSecret()
	if s1 == s2 {
		t.Fatal("two secrets are equal")
	}
	if _, err := FromSecret(s1); err != nil {
		t.Fatalf("NewSecret made a secret FromSecret refuses: %v", err)
	}
}

func TestKeyNeverPrints(t *testing.T) {
	k := testKey(t)
	type holder struct{ Key Key }
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), fmt.Sprintf("%+v %#v", holder{k}, holder{k})} {
		if strings.Contains(s, "0123456789") || strings.Contains(s, "48 49 50") {
			t.Fatalf("key bytes printed: %s", s)
		}
	}
}
