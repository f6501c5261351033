package workspaces

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Paths are confined to the workspace and have one form: hostile ones are refused as invalid
// fields, others are cleaned.
func TestCleanPath(t *testing.T) {
	for _, c := range []struct {
		in, want string // want "" is refused
	}{
		{"index.html", "index.html"},
		{"/src/app.js", "src/app.js"},
		{"/etc/passwd.txt", "etc/passwd.txt"},
		{"//host/share.txt", "host/share.txt"},
		{"./a//b/./c.css", "a/b/c.css"},
		{"cafe\u0301.html", "caf\u00e9.html"},
		{"IMG.PNG", "IMG.PNG"},
		{"../x.html", ""},
		{"a/../../x.html", ""},
		{"a/../x.html", ""},
		{"%2e%2e/x.html", ""},
		{"%2E%2E%2Fx.html", ""},
		{"..%2fx.html", ""},
		{"a\x00b.html", ""},
		{"a\nb.html", ""},
		{"a\u202eb.html", ""},
		{"a\u200bb.html", ""},
		{"..\\x.html", ""},
		{"src/", ""},
		{"", ""},
		{"   ", ""},
		{"/", ""},
		{"run.sh", ""},
		{"noext", ""},
		{"a.exe", ""},
		{strings.Repeat("a", 2000) + ".html", ""},
		{strings.Repeat("a", 256) + ".html", ""},
		{strings.Repeat("a/", 16) + "x.html", ""},
		{" lead.html", ""},
		{"\xff.html", ""},
	} {
		got, err := CleanPath("file_path", c.in)
		if c.want == "" {
			if e := apperr.As(err); err == nil || e.Kind != apperr.Invalid || e.Details[0].Field != "file_path" {
				t.Errorf("CleanPath(%q) = %q, %v; want an invalid file_path", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
