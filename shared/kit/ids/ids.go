// Package ids mints the ids of everything the service stores, in one place: New for every
// resource, and ObjectID for the `id` of agents and sources, which the interface shows in
// MongoDB's ObjectID form (24 hex digits) beside their `uuid`.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// New is a fresh UUIDv7: unique, and ordered by the millisecond it was minted.
func New() string { return uuid.Must(uuid.NewV7()).String() }

// process and counter make ObjectIDs minted in the same second unique: five random bytes per
// process, then a counter from a random start.
var (
	process = func() [5]byte {
		var b [5]byte
		_, _ = rand.Read(b[:])
		return b
	}()
	counter = func() *atomic.Uint32 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		c := &atomic.Uint32{}
		c.Store(binary.BigEndian.Uint32(b[:]))
		return c
	}()
)

// ObjectID is a fresh id in MongoDB's ObjectID form, as its 24 hex digits: the second it was
// minted, five random bytes of the process, and a counter.
func ObjectID() string {
	var b [12]byte
	binary.BigEndian.PutUint32(b[0:4], uint32(time.Now().Unix()))
	copy(b[4:9], process[:])
	n := counter.Add(1)
	b[9], b[10], b[11] = byte(n>>16), byte(n>>8), byte(n)
	return hex.EncodeToString(b[:])
}

// IsObjectID reports whether s has the form ObjectID mints: 24 lowercase hex digits.
func IsObjectID(s string) bool {
	if len(s) != 24 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
