package index

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/memory/text"
)

// This file turns the documents shipped with the Go distribution into test passages the way
// ingestion does: extracted and chunked by package text with its default options.

// passage is one test chunk with its text kept for judging answers.
type passage struct {
	ID   string
	Text string
}

// goDocs lists the Go distribution documents used as the real corpus, with their media types.
var goDocs = map[string]string{"go_spec.html": "text/html", "go_mem.html": "text/html", "godebug.md": "text/markdown", "asm.html": "text/html"}

// goroot returns the GOROOT of the go command running the tests.
var goroot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	return strings.TrimSpace(string(out)), err
})

// loadGoDocs reads goDocs from GOROOT and chunks them.
func loadGoDocs(tb testing.TB) []passage {
	tb.Helper()
	root, err := goroot()
	if err != nil {
		tb.Fatalf("go env GOROOT: %v", err)
	}
	var out []passage
	for _, name := range []string{"go_spec.html", "go_mem.html", "godebug.md", "asm.html"} {
		raw, err := os.ReadFile(filepath.Join(root, "doc", name))
		if err != nil {
			tb.Fatalf("reading the Go corpus: %v", err)
		}
		page, _, err := text.Extract(raw, goDocs[name], nil)
		if err != nil {
			tb.Fatalf("extracting %s: %v", name, err)
		}
		prefix := strings.TrimSuffix(strings.TrimSuffix(name, ".html"), ".md")
		for _, c := range text.Split(page.Text, text.ChunkOptions{}) {
			out = append(out, passage{ID: fmt.Sprintf("%s-%03d", prefix, c.Position), Text: c.Text})
		}
	}
	return out
}
