package main

import (
	"strings"
	"testing"
	"time"
)

// The load's report calls a heap steady when its floor stays put, however high a burst of work
// holds it for a moment, and growing when the floor rises.
func TestHeapGrowthIsJudgedByItsFloor(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	series := func(heap func(i int) float64) []memSample {
		var out []memSample
		for i := range 40 {
			out = append(out, memSample{at: time.Duration(i) * 3 * time.Second, heap: heap(i)})
		}
		return out
	}
	for _, c := range []struct {
		name    string
		samples []memSample
		verdict string
	}{
		{"a flat heap", series(func(int) float64 { return 50 * mb }), "steady"},
		{"a sawtooth around a flat floor", series(func(i int) float64 { return 50*mb + float64(i%5)*20*mb }), "steady"},
		{"a floor rising 4 MB a minute", series(func(i int) float64 { return 50*mb + float64(i)*0.2*mb + float64(i%5)*20*mb }), "growing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			slope, verdict := growth(c.samples)
			if !strings.HasPrefix(verdict, c.verdict) {
				t.Errorf("verdict %q (%.2f MB/min), want %s", verdict, slope/mb, c.verdict)
			}
		})
	}
}
