package index

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Benchmark corpora are synthetic but made of real prose: passages of
// benchWords words made of sentences of the Go documents picked at random,
// indexed in segments of benchSegment docs like the memory sources of an
// agent.
const (
	benchWords   = 300
	benchSegment = 500
)

// benchCache keeps what the benchmarks build once: the sentences of the Go
// corpus and the lexical corpora by size. The testing package runs each
// benchmark function more than once, and a 100k corpus takes seconds to build.
var benchCache struct {
	sync.Mutex
	sentences []string
	corpora   map[int][]*Segment
}

// benchSentences returns the sentences of the Go corpus.
func benchSentences(tb testing.TB) []string {
	benchCache.Lock()
	defer benchCache.Unlock()
	if benchCache.sentences == nil {
		end := regexp.MustCompile(`[.!?]\s+`)
		for _, p := range loadGoDocs(tb) {
			for _, s := range end.Split(strings.Join(strings.Fields(p.Text), " "), -1) {
				if len(strings.Fields(s)) >= 4 {
					benchCache.sentences = append(benchCache.sentences, s+".")
				}
			}
		}
	}
	return benchCache.sentences
}

// benchDocs returns n docs with ids from first on, each a passage of
// benchWords words of random sentences, with a random vector when dim > 0.
func benchDocs(rng *rand.Rand, sentences []string, first, n, dim int) []Doc {
	docs := make([]Doc, n)
	for i := range docs {
		var (
			b     strings.Builder
			words int
		)
		for words < benchWords {
			s := strings.Fields(sentences[rng.IntN(len(sentences))])
			s = s[:min(len(s), benchWords-words)]
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Join(s, " "))
			words += len(s)
		}
		docs[i] = Doc{ID: fmt.Sprintf("chunk-%07d", first+i), Text: b.String()}
		if dim > 0 {
			docs[i].Vector = randomVector(rng, dim)
		}
	}
	return docs
}

// benchSegments indexes n random passages in segments of benchSegment docs.
func benchSegments(tb testing.TB, n, dim int) []*Segment {
	sentences := benchSentences(tb)
	rng := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	var segs []*Segment
	for first := 0; first < n; first += benchSegment {
		segs = append(segs, NewSegment(benchDocs(rng, sentences, first, min(benchSegment, n-first), dim)))
	}
	return segs
}

// benchCorpus returns the lexical corpus of n passages, built once.
func benchCorpus(tb testing.TB, n int) []*Segment {
	benchCache.Lock()
	segs, ok := benchCache.corpora[n]
	benchCache.Unlock()
	if ok {
		return segs
	}
	segs = benchSegments(tb, n, 0)
	benchCache.Lock()
	defer benchCache.Unlock()
	if benchCache.corpora == nil {
		benchCache.corpora = map[int][]*Segment{}
	}
	benchCache.corpora[n] = segs
	return segs
}

// benchQueries returns n queries of 2 to 8 words drawn from one random
// sentence each, the way a user picks a few words of a topic.
func benchQueries(tb testing.TB, n int) []string {
	sentences := benchSentences(tb)
	rng := rand.New(rand.NewPCG(1, 1))
	word := regexp.MustCompile(`^[A-Za-z]{3,}$`)
	queries := make([]string, 0, n)
	for len(queries) < n {
		var words []string
		for _, w := range strings.Fields(sentences[rng.IntN(len(sentences))]) {
			if w = strings.Trim(w, `.,;:()"`); word.MatchString(w) {
				words = append(words, w)
			}
		}
		k := 2 + rng.IntN(7)
		if len(words) < k {
			continue
		}
		rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
		queries = append(queries, strings.Join(words[:k], " "))
	}
	return queries
}

// BenchmarkSearch measures lexical search over corpora of growing size and
// reports the median and 99th percentile latency of a query.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("chunks=%dk", n/1000), func(b *testing.B) {
			segs := benchCorpus(b, n)
			queries := benchQueries(b, 1000)
			b.ReportAllocs()
			b.ResetTimer()
			lat := make([]time.Duration, 0, b.N)
			for i := range b.N {
				start := time.Now()
				Search(segs, Query{Text: queries[i%len(queries)], Top: 10})
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

// BenchmarkSearchHybrid measures hybrid search over 10k chunks with
// 256-dimension vectors: BM25 plus a brute-force cosine over every chunk.
func BenchmarkSearchHybrid(b *testing.B) {
	const n, dim = 10_000, 256
	segs := benchSegments(b, n, dim)
	queries := benchQueries(b, 1000)
	rng := rand.New(rand.NewPCG(2, 2))
	vectors := make([][]float32, 64)
	for i := range vectors {
		vectors[i] = randomVector(rng, dim)
	}
	b.ReportAllocs()
	b.ResetTimer()
	lat := make([]time.Duration, 0, b.N)
	for i := range b.N {
		start := time.Now()
		Search(segs, Query{Text: queries[i%len(queries)], Vector: vectors[i%len(vectors)], Top: 10})
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// reportLatency reports the median and 99th percentile of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkNewSegment measures indexing throughput, in bytes of text, for a
// segment of benchSegment passages.
func BenchmarkNewSegment(b *testing.B) {
	docs := benchDocs(rand.New(rand.NewPCG(9, 9)), benchSentences(b), 0, benchSegment, 0)
	size := 0
	for _, d := range docs {
		size += len(d.Text)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		NewSegment(docs)
	}
}
