package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memSample is the service's memory at a moment of the load, from its /metrics: the resident
// set (process_resident_memory_bytes) and the Go heap live as of the last collection
// (go_gc_heap_live_bytes), which garbage not yet collected does not inflate.
type memSample struct {
	at        time.Duration
	rss, heap float64
}

// memWatch samples the service's memory while the load holds, to report it idle and under load
// and to tell a steady footprint from one that keeps growing.
type memWatch struct {
	url  string
	http *http.Client

	mu      sync.Mutex
	samples []memSample
}

// sample reads the service's memory once; ok is false when /metrics does not show it.
func (m *memWatch) sample(ctx context.Context) (memSample, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return memSample{}, false
	}
	res, err := m.http.Do(req)
	if err != nil {
		return memSample{}, false
	}
	defer res.Body.Close()
	var s memSample
	var seen int
	sc := bufio.NewScanner(io.LimitReader(res.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		v, err := strconv.ParseFloat(value, 64)
		if !ok || err != nil {
			continue
		}
		switch name {
		case "process_resident_memory_bytes":
			s.rss, seen = v, seen+1
		case "go_gc_heap_live_bytes":
			s.heap, seen = v, seen+1
		}
	}
	return s, seen == 2 && res.StatusCode == http.StatusOK
}

// watch samples every interval until ctx ends, the first sample at once.
func (m *memWatch) watch(ctx context.Context, interval time.Duration) {
	start := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if s, ok := m.sample(ctx); ok {
			m.add(s, time.Since(start))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// add keeps s, sampled at after the load began.
func (m *memWatch) add(s memSample, at time.Duration) {
	s.at = at
	m.mu.Lock()
	m.samples = append(m.samples, s)
	m.mu.Unlock()
}

// minJudged is the number of samples below which the report does not judge the heap's growth.
const minJudged = 8

// leakSlope is the growth of the live heap, in the load's second half, above which the report
// calls the footprint growing: caches are bounded, so a steady load reaches a plateau.
const leakSlope = 1 << 20 // bytes a minute

// report prints the service's memory idle (before the load), at the middle and at the end of it,
// and whether the heap kept growing through the second half.
func (m *memWatch) report(w io.Writer, idle memSample, idleOK bool) {
	m.mu.Lock()
	samples := m.samples
	m.mu.Unlock()
	if !idleOK || len(samples) < 2 {
		fmt.Fprintf(w, "\nmemory: not reported (%s shows no process memory)\n", m.url)
		return
	}
	mb := func(v float64) string { return fmt.Sprintf("%.1f MB", v/(1<<20)) }
	half := samples[len(samples)/2:]
	mid, end := half[0], samples[len(samples)-1]
	fmt.Fprintf(w, "\n| memory | idle | middle of the load | end of the load |\n|---|---|---|---|\n")
	fmt.Fprintf(w, "| RSS | %s | %s | %s |\n| Go heap live after the last collection | %s | %s | %s |\n", mb(idle.rss), mb(mid.rss), mb(end.rss), mb(idle.heap), mb(mid.heap), mb(end.heap))
	if len(samples) < minJudged {
		fmt.Fprintf(w, "memory in the second half: heap not judged, %d samples are too few (hold the load longer)\n", len(samples))
		return
	}
	slope, verdict := growth(half)
	fmt.Fprintf(w, "memory in the second half: heap %+.2f MB/min, %s\n", slope/(1<<20), verdict)
}

// growth is how fast the heap's floor rises through samples, in bytes a minute, and what that
// says. The floor is the least of each quarter of the samples: the live heap is measured at each
// collection, so between them it stands still, and the floor is what the process kept through
// each quarter, whatever a burst of work held for a moment.
func growth(samples []memSample) (float64, string) {
	var floors []memSample
	for q := range 4 {
		part := samples[q*len(samples)/4 : (q+1)*len(samples)/4]
		if len(part) == 0 {
			continue
		}
		low := part[0]
		for _, s := range part {
			if s.heap < low.heap {
				low = s
			}
		}
		floors = append(floors, low)
	}
	slope := perMinute(floors)
	if slope > leakSlope {
		return slope, "growing (a leak, or caches still filling: hold the load longer)"
	}
	return slope, "steady"
}

// perMinute is the least-squares slope of the heap samples, in bytes a minute.
func perMinute(samples []memSample) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		x := s.at.Minutes()
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+s.heap, sxx+x*x, sxy+x*s.heap
	}
	if d := n*sxx - sx*sx; d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}
