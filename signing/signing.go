// Package signing lets the worker trust what the gateway vouches for.
//
// # Why it exists
//
// Anyone who can signal the Temporal namespace (a script with its address, a person in the Web UI,
// which has no authentication by default) could send a lane an `approval` signal, or a `message`
// signal saying "yes, do it", in the name of the person who asked for a destructive action. The
// gateway is the only component that learns who clicked or wrote what from Slack itself (signature-
// verified HTTP or Socket Mode), so it signs what it hands to Temporal with a key it shares with the
// worker, and the worker accepts an approval only when the signature verifies. An operator who must
// approve does it from Slack, as an admin listed in LUCY_ADMIN_USERS.
//
// # Format
//
// A signature is "v1:" followed by the unpadded base64url HMAC-SHA256 of a canonical encoding: a
// domain label (which says what kind of thing is signed and in which version) and then each field,
// every one prefixed with its length, so that no two different inputs encode alike ("ab"+"c" and
// "a"+"bc" differ) and a message signature can never pass for an approval signature. The "v1:" prefix
// lets a later format coexist with this one while signed payloads in workflow histories age out.
package signing

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MinSecretChars is the shortest secret FromSecret accepts: shorter secrets can be guessed offline
// from one signature in workflow history, which anyone with Web UI access can read.
const MinSecretChars = 32

// version prefixes every signature.
const version = "v1:"

// Domain labels. They are part of the signed bytes, so a signature made for one kind of input never
// verifies for another.
const (
	domainMessage  = "lucy/message/v1"
	domainApproval = "lucy/button-approval/v1"
	// deriveLabel keys the derivation of the approval key from the Slack bot token, so that the key
	// is not the token itself and is useless for anything else.
	deriveLabel = "lucy approval key from SLACK_BOT_TOKEN v1"
)

// Errors of Verify*. They say why, for the log; none of them reveals the key.
var (
	ErrNoKey          = errors.New("no approval key configured")
	ErrUnsigned       = errors.New("unsigned")
	ErrUnknownVersion = errors.New("unknown signature version")
	ErrBadSignature   = errors.New("signature does not verify")
)

// Key is the secret the gateway signs with and the worker verifies with. The zero Key signs nothing
// (Sign* return "") and verifies nothing. It never prints its bytes, so a Key that ends up in a log
// line or a %v stays secret.
type Key struct{ b []byte }

// FromSecret returns the key for an explicit shared secret (LUCY_APPROVAL_KEY, or the key file of
// `lucy dev`). The secret is used as given; it must have at least MinSecretChars characters.
func FromSecret(secret string) (Key, error) {
	if n := utf8.RuneCountInString(secret); n < MinSecretChars {
		return Key{}, fmt.Errorf("the secret has %d characters, fewer than %d", n, MinSecretChars)
	}
	return Key{b: []byte(secret)}, nil
}

// FromBotToken derives the key from the Slack bot token, which the worker and the gateway both hold
// already: a deployment then needs no extra setting. Rotating the token changes the key: approvals
// signed with the old one and checked with the new one (gateway and worker restarted at different
// times) are refused, and people click again.
func FromBotToken(token string) Key {
	if token == "" {
		return Key{}
	}
	mac := hmac.New(sha256.New, []byte(deriveLabel))
	mac.Write([]byte(token))
	return Key{b: mac.Sum(nil)}
}

// NewSecret returns a fresh random secret for FromSecret: 32 random bytes in base64url (43 characters).
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// IsZero reports whether k is the zero Key (no key configured).
func (k Key) IsZero() bool { return len(k.b) == 0 }

// Equal reports whether two keys are the same, in constant time.
func (k Key) Equal(o Key) bool { return hmac.Equal(k.b, o.b) }

// String hides the key.
func (k Key) String() string {
	if k.IsZero() {
		return "signing.Key(none)"
	}
	return "signing.Key(redacted)"
}

// GoString hides the key from %#v too.
func (k Key) GoString() string { return k.String() }

// Message is what the gateway vouches for in a human message: who said what, where.
type Message struct {
	Team, Channel string
	// ThreadTS is the root of the thread the message is in: a "yes" is bound to its thread, so that
	// one written in another thread of the channel cannot be replayed into this one.
	ThreadTS       string
	TS, User, Text string
}

// Approval is what the gateway vouches for in a button click: who decided what on which proposal.
type Approval struct {
	Lane        string // lane workflow ID
	Fingerprint string // the proposal the click answers
	User        string
	Approved    bool // the Approve button (true) or Deny (false)
}

func (m Message) encode() []byte {
	return encode(domainMessage, m.Team, m.Channel, m.ThreadTS, m.TS, m.User, m.Text)
}

func (a Approval) encode() []byte {
	decision := "denied"
	if a.Approved {
		decision = "approved"
	}
	return encode(domainApproval, a.Lane, a.Fingerprint, a.User, decision)
}

// encode is the canonical encoding: each part as an 8-byte big-endian length and its bytes.
func encode(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += 8 + len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint64(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// SignMessage signs a message; "" with the zero Key.
func (k Key) SignMessage(m Message) string { return k.sign(m.encode()) }

// VerifyMessage checks a message signature: nil when sig is k's signature over m.
func (k Key) VerifyMessage(m Message, sig string) error { return k.verify(m.encode(), sig) }

// SignApproval signs a button approval; "" with the zero Key.
func (k Key) SignApproval(a Approval) string { return k.sign(a.encode()) }

// VerifyApproval checks a button approval's signature: nil when sig is k's signature over a.
func (k Key) VerifyApproval(a Approval, sig string) error { return k.verify(a.encode(), sig) }

func (k Key) mac(data []byte) []byte {
	m := hmac.New(sha256.New, k.b)
	m.Write(data)
	return m.Sum(nil)
}

func (k Key) sign(data []byte) string {
	if k.IsZero() {
		return ""
	}
	return version + base64.RawURLEncoding.EncodeToString(k.mac(data))
}

func (k Key) verify(data []byte, sig string) error {
	switch {
	case k.IsZero():
		return ErrNoKey
	case sig == "":
		return ErrUnsigned
	case len(sig) < len(version) || sig[:len(version)] != version:
		return ErrUnknownVersion
	}
	got, err := base64.RawURLEncoding.DecodeString(sig[len(version):])
	if err != nil {
		return ErrBadSignature
	}
	// hmac.Equal compares in constant time: the time a wrong guess takes says nothing about how many
	// of its bytes were right.
	if !hmac.Equal(got, k.mac(data)) {
		return ErrBadSignature
	}
	return nil
}
