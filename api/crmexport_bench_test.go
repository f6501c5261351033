package api_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkContactsExport exports a project's contacts (each with three custom fields) as CSV
// over HTTP, the body read and thrown away as it comes. Besides the usual figures (of the whole
// process: the server and the client), it reports the allocations and bytes allocated per
// contact, and peak-heap-MiB: the most the live heap grew over its size before the export. Both
// staying the same from 10,000 to 100,000 contacts is what constant memory means.
// docs/BENCHMARKS.md reports them.
func BenchmarkContactsExport(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("Contacts="+strconv.Itoa(n), func(b *testing.B) {
			bb := setup(b, withRateLimit(0))
			botID := bb.createBot(b, nil)["id"].(string)
			q := "?project_id=" + bb.project.ID + "&bot_id=" + botID
			for _, f := range []map[string]any{
				{"label": "Company Size", "field_type": "select", "options": []any{"1-10", "11-50"}},
				{"label": "Seats", "field_type": "number"},
				{"label": "Interests", "field_type": "multiselect", "options": []any{"news", "offers"}},
			} {
				f["project_id"], f["bot_id"] = bb.project.ID, botID
				benchPost(b, bb, "POST", "/v1/bot/crm/fields", f)
			}
			seedContacts(b, bb, n)
			get := func() {
				req, _ := http.NewRequestWithContext(b.Context(), "GET", bb.client.URL+"/v1/bot/crm/contacts/export"+q, nil)
				req.Header.Set("Authorization", "Bearer "+bb.key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				defer res.Body.Close()
				got, err := io.Copy(io.Discard, res.Body)
				if err != nil || res.StatusCode != http.StatusOK || got < int64(n)*50 {
					b.Fatalf("export: %v, status %d, %d bytes", err, res.StatusCode, got)
				}
			}
			get()
			var peak float64
			var before runtime.MemStats
			var allocs, bytes uint64
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				base := liveHeap()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				var top atomic.Uint64
				done := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					for {
						if h := liveHeap(); h > top.Load() {
							top.Store(h)
						}
						select {
						case <-done:
							return
						case <-time.After(2 * time.Millisecond):
						}
					}
				}()
				get()
				close(done)
				<-sampled
				b.StopTimer()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				allocs += after.Mallocs - before.Mallocs
				bytes += after.TotalAlloc - before.TotalAlloc
				if top.Load() > base {
					peak = max(peak, float64(top.Load()-base)/(1<<20))
				}
				b.StartTimer()
			}
			contacts := float64(b.N) * float64(n)
			b.ReportMetric(float64(allocs)/contacts, "allocs/contact")
			b.ReportMetric(float64(bytes)/contacts, "B/contact")
			b.ReportMetric(peak, "peak-heap-MiB")
		})
	}
}

// liveHeap is the bytes of the heap's objects, live or not yet swept.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// seedContacts stores n contacts of bb's project straight into the store, with values of the
// benchmark's fields.
func seedContacts(b *testing.B, bb *bundle, n int) {
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for start := 0; start < n; start += 1000 {
		var batch []any
		for i := start; i < min(start+1000, n); i++ {
			batch = append(batch, map[string]any{"_id": fmt.Sprintf("contact-%07d", i), "project_id": bb.project.ID,
				"name": "Contact " + strconv.Itoa(i), "email": fmt.Sprintf("c%d@example.com", i), "phone": "+44 20 7946 0958",
				"company": "Acme, Ltd", "status": "lead", "status_label": "Lead", "summary": "", "created_at": at, "updated_at": at,
				"fields": map[string]any{"company_size": "11-50", "seats": float64(i), "interests": []any{"news", "offers"}}})
		}
		if _, err := bb.db.Collection("contacts").InsertMany(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
}
