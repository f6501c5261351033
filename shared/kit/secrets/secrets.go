// Package secrets seals the credentials users give the platform (the keys of their MCP servers
// and APIs) before they are stored: AES-256-GCM with the deployment's key, a fresh nonce per
// value, and the value's owner as additional data, so a sealed value copied onto another record
// does not open.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// ErrNoKey is the error of sealing with a box that has no key.
var ErrNoKey = errors.New("secrets: no key is configured (AGENTPLANE_SECRETS_KEY)")

// Box seals and opens values with one key. The zero Box has no key: it seals nothing.
type Box struct{ aead cipher.AEAD }

// New returns the box of key, a KeySize-byte key.
func New(key []byte) (Box, error) {
	if len(key) != KeySize {
		return Box{}, fmt.Errorf("secrets: the key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return Box{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Box{}, err
	}
	return Box{aead: aead}, nil
}

// ParseKey reads a key written as base64 (standard or URL alphabet, padded or not).
func ParseKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != KeySize {
				return nil, fmt.Errorf("want %d bytes in base64, got %d", KeySize, len(key))
			}
			return key, nil
		}
	}
	return nil, errors.New("want base64")
}

// NewKey returns a random key, in base64.
func NewKey() string {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key)
	return base64.StdEncoding.EncodeToString(key)
}

// Ready reports whether the box has a key.
func (b Box) Ready() bool { return b.aead != nil }

// Seal returns plain sealed for owner (the id of the record it is stored on), in base64.
func (b Box) Seal(plain []byte, owner string) (string, error) {
	if b.aead == nil {
		return "", ErrNoKey
	}
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, plain, []byte(owner))), nil
}

// Open returns the value sealed for owner.
func (b Box) Open(sealed, owner string) ([]byte, error) {
	if b.aead == nil {
		return nil, ErrNoKey
	}
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return nil, errors.New("secrets: not a sealed value")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(owner))
	if err != nil {
		return nil, errors.New("secrets: the value does not open with this key for this owner")
	}
	return plain, nil
}

// Derive is a key for one purpose made from key, the deployment's key (HKDF-SHA256): what signs
// end users' sessions, say, is not what seals credentials.
func Derive(key []byte, purpose string) ([]byte, error) {
	if len(key) != KeySize {
		return nil, ErrNoKey
	}
	return hkdf.Key(sha256.New, key, nil, "agentplane/"+purpose, KeySize)
}
