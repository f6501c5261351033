package httpx_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/workflows"
)

// FuzzDecode holds the decoder and the validation after it to "bad input gets a 4xx": whatever
// the body, decoding it into what the requests of chat, deals, contacts and workflows hold (the
// API's requests are these inputs beside the project and agent ids) fails with a client error or
// succeeds, and what it accepts validates without a server error.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"project_id":"p","bot_id":"b","message":"hi","top":"3","stream":false}`,
		`{"message":null,"top":"","reasoning_mode":"","chat_mode":"plan","max_reply_tokens":"99999999999999999999"}`,
		`{"$where":"1","title":"x"}`, `{"title":"a\u0000b"}`, `[]`, `"x"`, `{"a":1}{"b":2}`, `{"value":1e400}`,
		`{"title":"Deal","value":"12","contact":{"email":"not an email"},"status":"WON"}`,
		`{"name":"w","trigger_type":"event","trigger_event":"deal.won","conditions":[{"field":"data.v","operator":"gte","value":"x"}],"actions":[{"type":"webhook","params":{"url":"http://{{"}}]}`,
		"\xff\xfe", ``, `{"stream":"yes"}`, `{"tags":[1,2]}`, `{"integrations":[{"a.b":1,"$x":{"":"ü"}}]}`,
		`{"name":"w","trigger_type":"manual","actions":[{"type":"webhook","params":{"url":"http://h","body":"` + strings.Repeat("a", 33<<10) + `"}}]}`,
		`{"name":"w","trigger_type":"event","trigger_event":"bot.updated","conditions":[{"field":"data.integrations.0","operator":"eq","value":{"a.b":1,"$gt":""}}],"actions":[{"type":"webhook","params":{"url":"http://h","headers":{"X.Y":"1","$X":"2"},"body":{"user.id":"{{data.uuid}}","":"e"}}}]}`,
	} {
		f.Add([]byte(seed))
	}
	gin.SetMode(gin.ReleaseMode)
	f.Fuzz(func(t *testing.T, body []byte) {
		d := httpx.Decoder{MaxBody: 1 << 16}
		decode := func(dst any) error {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest(http.MethodPost, "/v1/bot/chat", bytes.NewReader(body))
			c.Request.Header.Set("Content-Type", "application/json")
			return d.Decode(c, dst)
		}
		clientError := func(what string, err error) {
			if err != nil && httpx.StatusOf(apperr.As(err).Kind) >= 500 {
				t.Fatalf("%s of %q: %v, a server error", what, body, err)
			}
		}
		var chat struct {
			chats.Input
			Version agents.VersionName `json:"version"`
		}
		err := decode(&chat)
		clientError("decoding a chat", err)
		if err == nil {
			clientError("validating a chat", chat.Input.Validate())
		}
		var deal crm.DealInput
		clientError("decoding a deal", decode(&deal))
		var contact crm.ContactInput
		clientError("decoding a contact", decode(&contact))
		var w workflows.Input
		if err := decode(&w); err == nil && w.TriggerType != nil {
			d := workflows.Definition{TriggerType: *w.TriggerType}
			if w.Actions != nil {
				d.Actions = *w.Actions
			}
			if w.Conditions != nil {
				d.Conditions = *w.Conditions
			}
			clientError("validating a workflow", d.Validate(nil))
		}
	})
}
