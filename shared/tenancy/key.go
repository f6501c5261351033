package tenancy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// KeyPrefix starts every API key, so leaked keys are easy to recognise and scan for.
const KeyPrefix = "ap_"

// newSecret returns a fresh API key: KeyPrefix and 256 random bits.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashKey is how a key is stored and looked up: hex SHA-256. A slow hash is not needed for
// 256-bit random secrets.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// displayPrefix is the part of a key shown in listings to tell keys apart.
func displayPrefix(secret string) string {
	return secret[:len(KeyPrefix)+8]
}

// wellFormed rejects values that cannot be keys before touching the database.
func wellFormed(secret string) bool {
	return strings.HasPrefix(secret, KeyPrefix) && len(secret) == len(KeyPrefix)+43
}

// hashesEqual compares two hashes in constant time.
func hashesEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
