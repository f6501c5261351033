package deploy

import (
	"os"
	"strings"
	"testing"
)

// The binary a newcomer carries is small: `make build` and the image both build it without debug
// information and symbols (-ldflags="-s -w") and without the builder's paths (-trimpath).
func TestBuildsStripTheBinary(t *testing.T) {
	for _, f := range []string{"../Makefile", "Dockerfile"} {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		builds := 0
		for _, l := range strings.Split(string(text), "\n") {
			if !strings.Contains(l, " build ") || !strings.Contains(l, "./cmd/agentplane") || strings.Contains(l, "teststore") {
				continue
			}
			builds++
			if !strings.Contains(l, " -trimpath ") || !strings.Contains(l, ` -ldflags="-s -w" `) {
				t.Errorf("%s builds the binary with debug information or local paths: %s", f, strings.TrimSpace(l))
			}
		}
		if builds == 0 {
			t.Errorf("%s builds no ./cmd/agentplane", f)
		}
	}
}
