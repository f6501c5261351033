package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// dev makes a secrets key on first start, keeps it readable by no one else, and uses the same one
// on every start after, so tools' credentials stored in one run open in the next; a kept key
// that is not one is an error, not a new key.
func TestDevSecretsKeyKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := devSecretsKey(dir)
	if err != nil || len(first) != 32 {
		t.Fatalf("first key %d bytes, %v", len(first), err)
	}
	info, err := os.Stat(filepath.Join(dir, "secrets.key"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v, %v", info, err)
	}
	again, err := devSecretsKey(dir)
	if err != nil || !bytes.Equal(first, again) {
		t.Fatal("a second start made another key")
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.key"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := devSecretsKey(dir); err == nil {
		t.Fatal("a broken key file was taken")
	}
}
