package ids_test

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kit/ids"
)

func TestObjectIDs(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{24}$`)
	seen := map[string]bool{}
	var minted []string
	for range 10000 {
		id := ids.ObjectID()
		if !form.MatchString(id) {
			t.Fatalf("%q is not 24 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("%q minted twice", id)
		}
		seen[id] = true
		minted = append(minted, id)
	}
	// The first 8 digits are the second it was minted: ids of later seconds sort after.
	now := time.Now().Unix()
	if got := minted[0][:8]; got != formatSecond(now) && got != formatSecond(now-1) {
		t.Fatalf("id %s does not begin with the second %x", minted[0], now)
	}
}

func formatSecond(s int64) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		out[i] = digits[s&0xf]
		s >>= 4
	}
	return string(out)
}

func TestNewIsOrderedAndUnique(t *testing.T) {
	var minted []string
	for range 1000 {
		minted = append(minted, ids.New())
	}
	if !slices.IsSorted(minted) {
		t.Fatal("UUIDv7 ids minted one after another are not in order")
	}
	slices.Sort(minted)
	if len(slices.Compact(minted)) != 1000 {
		t.Fatal("an id was minted twice")
	}
}

func TestIsObjectID(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{ids.ObjectID(), true},
		{"0123456789abcdef01234567", true},
		{"0123456789ABCDEF01234567", false},
		{"0123456789abcdef0123456", false},
		{"0123456789abcdef012345678", false},
		{"0123456789abcdefg1234567", false},
		{ids.New(), false},
		{"", false},
	} {
		if got := ids.IsObjectID(tt.s); got != tt.want {
			t.Errorf("IsObjectID(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
