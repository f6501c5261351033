package provider_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/llm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKey is the API key of the tests; no error may contain it.
const testKey = "sk-test-4f1c9a7e2b6d8053"

// newModel returns an OpenAI-compatible model calling fake, with short deadlines; edit
// changes the configuration.
func newModel(fake *providertest.Server, edit func(*provider.Config)) llm.Model {
	c := provider.Config{BaseURL: fake.URL, APIKey: testKey, Timeout: 2 * time.Second}
	if edit != nil {
		edit(&c)
	}
	return provider.NewOpenAI(c)
}

// request is a request with a system and a user message.
func request() llm.Request {
	return llm.Request{
		Model: "gpt-test",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You answer from the passages."},
			{Role: llm.RoleUser, Content: "What is the capital of France?"},
		},
	}
}

// wantError checks that err is an *apperr.Error of kind and code that does not contain the
// API key, and returns it.
func wantError(t *testing.T, err error, kind apperr.Kind, code string) *apperr.Error {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want an *apperr.Error %s", err, err, code)
	}
	if e.Kind != kind || e.Code != code {
		t.Fatalf("error = kind %d code %q (%v), want kind %d code %q", e.Kind, e.Code, err, kind, code)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(e.Message, testKey) {
		t.Fatalf("error %q contains the API key", err)
	}
	return e
}

// collect returns an onDelta that appends the deltas to *deltas.
func collect(deltas *[]string) func(string) error {
	return func(d string) error {
		*deltas = append(*deltas, d)
		return nil
	}
}
