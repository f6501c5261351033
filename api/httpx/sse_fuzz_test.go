package httpx

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	sselib "github.com/tmaxmax/go-sse"
)

// FuzzSSE holds the event stream to what a standard SSE parser reads back: whatever text the
// model streams and whatever an event carries, a client gets each event whole, under its name and
// number, with the same text, and heartbeats in between change nothing.
func FuzzSSE(f *testing.F) {
	for _, seed := range [][2]string{
		{"Hello", "world"}, {"line\nbreak", "cr\rlf\r\n"}, {"data: fake\n\nevent: error", ": comment"},
		{"", "\x00\xff"}, {"id: 9\nretry: 1", "\u2028\u2029"}, {"ünïcödé 🙂", `{"json":"inside"}`},
	} {
		f.Add(seed[0], seed[1])
	}
	gin.SetMode(gin.ReleaseMode)
	f.Fuzz(func(t *testing.T, delta, message string) {
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		c.Request = httptest.NewRequest("POST", "/v1/bot/chat", nil)
		s := NewSSE(c, time.Hour)
		if err := s.Event("stored", gin.H{"message": message}); err != nil {
			t.Fatal(err)
		}
		if err := s.Delta(delta); err != nil {
			t.Fatal(err)
		}
		_, _ = rec.WriteString(": ping\n\n")
		if err := s.Event("done", gin.H{"reply": delta + message}); err != nil {
			t.Fatal(err)
		}
		s.Close()

		type want struct{ id, name, key, text string }
		wants := []want{{"1", "stored", "message", message}, {"", "delta", "content", delta}, {"2", "done", "reply", delta + message}}
		var got []sselib.Event
		for ev, err := range sselib.Read(strings.NewReader(rec.Body.String()), nil) {
			if err != nil {
				t.Fatalf("parse: %v\n%q", err, rec.Body.String())
			}
			got = append(got, ev)
		}
		if len(got) != len(wants) {
			t.Fatalf("%d events, want %d:\n%q", len(got), len(wants), rec.Body.String())
		}
		for i, w := range wants {
			ev := got[i]
			var data map[string]string
			if err := json.Unmarshal([]byte(ev.Data), &data); err != nil {
				t.Fatalf("event %d data %q: %v", i, ev.Data, err)
			}
			// JSON carries each byte of invalid UTF-8 as U+FFFD, as it would to any client.
			text := []rune(w.text)
			if ev.Type != w.name || (w.id != "" && ev.LastEventID != w.id) || data[w.key] != string(text) {
				t.Fatalf("event %d: %q %q %q, want %q %q %q", i, ev.Type, ev.LastEventID, data[w.key], w.name, w.id, string(text))
			}
		}
	})
}
