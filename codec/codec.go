// Package codec encrypts every payload Lucy's processes write to Temporal: workflow inputs and
// results, activity inputs and results (message text, tool results, model replies), signals, memos.
// Temporal's history is readable by everyone with access to the namespace or the Web UI; with a key
// set (LUCY_PAYLOAD_KEYS), it holds only ciphertext.
//
// Each payload is sealed with AES-256-GCM under the current key; its metadata names the key's ID, so
// keys can rotate: new payloads use the first key, older ones are opened by their ID with any key
// still listed. Payloads written before encryption was turned on (no "binary/encrypted" encoding)
// pass through unchanged, so turning it on never strands a running workflow.
//
// Handler serves Temporal's remote codec protocol (POST …/encode, …/decode) so that the Web UI can
// show decoded payloads to an operator; with a Login it decodes only for callers signed in to the
// Web UI's identity provider (oidc.go), as `lucy worker` requires beyond loopback.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload.
const (
	MetadataEncoding = converter.MetadataEncoding // "encoding"
	EncodingName     = "binary/encrypted"
	MetadataKeyID    = "encryption-key-id"
)

// Key is one AES-256 key and its ID.
type Key struct {
	ID  string
	Raw []byte // 32 bytes
}

var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ParseKeys reads LUCY_PAYLOAD_KEYS: "id:base64key[,id:base64key…]", the first being the key new
// payloads are sealed with. Each key is 32 random bytes in standard or URL-safe base64 (`openssl rand
// -base64 32`).
func ParseKeys(spec string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		if !ok || !keyIDRE.MatchString(id) {
			return nil, fmt.Errorf("LUCY_PAYLOAD_KEYS: %q is not id:base64key (an ID of letters, digits, . _ -)", redactKey(part))
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			raw, err = base64.URLEncoding.DecodeString(b64)
		}
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("LUCY_PAYLOAD_KEYS: key %q is not 32 bytes of base64 (make one with: openssl rand -base64 32)", id)
		}
		if seen[id] {
			return nil, fmt.Errorf("LUCY_PAYLOAD_KEYS: key ID %q is listed twice", id)
		}
		seen[id] = true
		keys = append(keys, Key{ID: id, Raw: raw})
	}
	return keys, nil
}

func redactKey(part string) string {
	id, _, _ := strings.Cut(part, ":")
	return id + ":…"
}

// Codec is the AES-GCM payload codec.
type Codec struct {
	current string
	aeads   map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a codec over keys (the first is current).
func New(keys []Key) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("codec: no keys")
	}
	c := &Codec{current: keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for _, k := range keys {
		block, err := aes.NewCipher(k.Raw)
		if err != nil {
			return nil, fmt.Errorf("codec: key %s: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec: key %s: %w", k.ID, err)
		}
		c.aeads[k.ID] = aead
	}
	return c, nil
}

// Encode seals each payload under the current key. The key ID is bound to the ciphertext as
// associated data, so a payload cannot be relabelled to another key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.current]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: marshal payload: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("codec: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{MetadataEncoding: []byte(EncodingName), MetadataKeyID: []byte(c.current)},
			Data:     aead.Seal(nonce, nonce, plain, []byte(c.current)),
		}
	}
	return out, nil
}

// Decode opens encrypted payloads with the key their metadata names; others pass through.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[MetadataEncoding]) != EncodingName {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.aeads[id]
		if !ok {
			return nil, fmt.Errorf("codec: payload sealed with key %q, which LUCY_PAYLOAD_KEYS no longer lists", id)
		}
		data := p.GetData()
		if len(data) < aead.NonceSize() {
			return nil, errors.New("codec: encrypted payload too short")
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("codec: open payload sealed with key %q: %w", id, err)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("codec: unmarshal payload: %w", err)
		}
		out[i] = &dec
	}
	return out, nil
}

// DataConverter is the SDK's default converter with the codec, or the default alone without keys.
func DataConverter(keys []Key) (converter.DataConverter, error) {
	if len(keys) == 0 {
		return converter.GetDefaultDataConverter(), nil
	}
	c, err := New(keys)
	if err != nil {
		return nil, err
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c), nil
}

// Handler serves the remote codec protocol for the Web UI (POST <prefix>/encode and
// <prefix>/decode), answering CORS preflights from allowOrigins (the Web UI's origin). With login,
// every request but a preflight must carry a valid token of that login (401 otherwise); a preflight
// carries none (browsers never send credentials on one) and reveals nothing.
func Handler(keys []Key, login *Login, allowOrigins ...string) (http.Handler, error) {
	c, err := New(keys)
	if err != nil {
		return nil, err
	}
	inner := converter.NewPayloadCodecHTTPHandler(c)
	if login != nil {
		if login.Issuer == "" || login.Audience == "" {
			return nil, errors.New("codec: a login needs both an issuer and an audience")
		}
		inner = &loginGuard{login: *login, next: inner}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		for _, o := range allowOrigins {
			if origin == o {
				w.Header().Set("Access-Control-Allow-Origin", origin)
				w.Header().Set("Access-Control-Allow-Credentials", "true")
				// Authorization-Extras carries the ID token the Web UI sends beside the access
				// token when its codec passes the access token (see callerToken).
				w.Header().Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization, Authorization-Extras")
				w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				w.Header().Set("Vary", "Origin")
			}
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		inner.ServeHTTP(w, r)
	}), nil
}
