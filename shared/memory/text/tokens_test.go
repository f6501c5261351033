package text

import (
	"sync"
	"testing"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"hello world", "hello world", 2},
		{"openai cookbook example", "tiktoken is great!", 6},
		{"sentence", "The Go memory model specifies the conditions.", 8},
		{"url", "https://example.com/a/b?c=d#e", 11},
		{"japanese", "こんにちは世界。", 5},
		{"special token marker is ordinary text", "<|endoftext|>", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tokens(tt.in); got != tt.want {
				t.Errorf("Tokens(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestTokensConcurrent(t *testing.T) {
	// Pinned counts, not computed first, so that the parallel calls may be
	// the ones that load the encoder.
	tests := map[string]int{
		"hello world":        2,
		"tiktoken is great!": 6,
		"こんにちは世界。":           5,
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				for in, want := range tests {
					if got := Tokens(in); got != want {
						t.Errorf("Tokens(%q) = %d concurrently, want %d", in, got, want)
					}
				}
			}
		})
	}
	wg.Wait()
}
