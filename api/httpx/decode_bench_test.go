package httpx

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// BenchmarkDecode measures the request decoder (size limit, UTF-8, syntax and trailing-data
// checks, NUL walk, typed decode) against plain json.Unmarshal of the same body, the baseline.
func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"project_id":"p","bot_id":"b","message":"What are your opening hours on public holidays?",` +
		`"tags":["faq","hours"],"top":5,"stream":false,"reasoning_mode":"standard","source_ids":["s1","s2","s3"]}`)
	type request struct {
		ProjectID     string   `json:"project_id"`
		BotID         string   `json:"bot_id"`
		Message       string   `json:"message"`
		Tags          []string `json:"tags"`
		Top           int      `json:"top"`
		Stream        bool     `json:"stream"`
		ReasoningMode string   `json:"reasoning_mode"`
		SourceIDs     []string `json:"source_ids"`
	}
	b.Run("Baseline/json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var r request
			if err := json.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		gin.SetMode(gin.ReleaseMode)
		d := Decoder{MaxBody: 1 << 20}
		for b.Loop() {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request, _ = http.NewRequest("POST", "/", bytes.NewReader(body))
			c.Request.Header.Set("Content-Type", "application/json")
			var r request
			if err := d.Decode(c, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
