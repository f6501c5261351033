package tasks_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/tasks"
)

func TestRedacted(t *testing.T) {
	for _, tt := range []struct{ name, payload, want string }{
		{"ProviderKey", `{"execution_id":"e","provider_key":"sk-1"}`, `{"execution_id":"e","provider_key":"[redacted]"}`},
		{"Nested", `{"a":[{"Api_Key":"x","token_count":3}],"b":{"secret":{"v":1}}}`, `{"a":[{"Api_Key":"[redacted]","token_count":"[redacted]"}],"b":{"secret":"[redacted]"}}`},
		{"NoSecrets", `{"source_id":"s","generation":2}`, `{"generation":2,"source_id":"s"}`},
		{"NotJSON", "\x00\x01abc", "(5 bytes, not JSON)"},
		{"Scalar", `"sk-loose"`, `"sk-loose"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tasks.Redacted([]byte(tt.payload)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
