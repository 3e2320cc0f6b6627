package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Key is the AES-256 key that encrypts stored credentials (LUCY_SECRETS_KEY).
type Key [32]byte

// KeyFile is the name of the key `lucy dev` generates in its data directory when LUCY_SECRETS_KEY is
// not set.
const KeyFile = "secrets.key"

// ParseKey reads a key written as 32 bytes of standard or URL-safe base64 (`openssl rand -base64 32`)
// or as 64 hexadecimal digits. The error never repeats the value.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	var raw []byte
	var err error
	if len(s) == 64 {
		raw, err = hex.DecodeString(s)
	} else {
		err = errors.New("not hex")
	}
	if err != nil {
		if raw, err = base64.StdEncoding.DecodeString(s); err != nil {
			raw, err = base64.URLEncoding.DecodeString(s)
		}
	}
	if err != nil || len(raw) != 32 {
		return Key{}, errors.New("LUCY_SECRETS_KEY is not 32 bytes in base64 or 64 hex digits (make one with: openssl rand -base64 32)")
	}
	var k Key
	copy(k[:], raw)
	return k, nil
}

// LoadOrCreateKeyFile reads the key in path, creating it (32 random bytes, base64, mode 0600) when
// there is none: `lucy dev`'s key, in its data directory, so that a developer sets nothing. Two
// processes starting at once agree: the file is created exclusively and the loser reads the winner's.
func LoadOrCreateKeyFile(path string) (Key, error) {
	if data, err := os.ReadFile(path); err == nil {
		k, err := ParseKey(string(data))
		if err != nil {
			return Key{}, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Key{}, fmt.Errorf("read the secrets key: %w", err)
	}
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return Key{}, fmt.Errorf("create the secrets key: %w", err)
	}
	// The key is written whole to a temporary file first and then linked to its name, which fails
	// if the name exists: a process starting at the same moment never reads a half-written key.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return Key{}, fmt.Errorf("create the secrets key: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(k[:]) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if errors.Is(err, fs.ErrExist) {
		return LoadOrCreateKeyFile(path) // another process made it first
	}
	if err != nil {
		return Key{}, fmt.Errorf("create the secrets key: %w", err)
	}
	return k, nil
}
