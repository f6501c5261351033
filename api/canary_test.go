package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/agents"
)

// A canary sends its share of new chats to the candidate version, chosen by the hash of the
// chat's id: of 40 chats at share 0.5 some get the candidate's instruction and the others the
// published one, each chat keeps its version for its next message, the OpenAI door's new chats
// are split the same way, and the summary's answers and votes by version add up to its totals.
// Removing the canary sends its chats back to the published version. A canary naming no version
// of the agent, or a share not strictly between 0 and 1, is 422.
func TestCanarySplitsNewChatsByVersion(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	b.startWorker(t, workerOptions{})
	a := b.versionedBot(t, map[string]any{"instruction": "Published instruction.", "provider_key": "k", "reasoning_type": "standard"})
	published := a.update(t, map[string]any{"versioning": true})["published_version"].(float64)
	candidate := a.update(t, map[string]any{"instruction": "Candidate instruction."})["version"].(float64)

	for _, tt := range []struct {
		name   string
		canary map[string]any
		field  string
	}{
		{"NoSuchVersion", map[string]any{"version": candidate + 1, "share": 0.5}, "canary.version"},
		{"ShareZero", map[string]any{"version": candidate, "share": 0}, "canary.share"},
		{"ShareOne", map[string]any{"version": candidate, "share": 1}, "canary.share"},
		{"NegativeShare", map[string]any{"version": candidate, "share": -0.2}, "canary.share"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{"canary": tt.canary})})
			expectField(t, res, tt.field)
		})
	}
	bot := a.update(t, map[string]any{"canary": map[string]any{"version": candidate, "share": 0.5}})
	if c, _ := bot["canary"].(map[string]any); c["version"] != candidate || c["share"] != 0.5 || bot["instruction"] != "Published instruction." {
		t.Fatalf("the agent's canary %v, instruction %v", bot["canary"], bot["instruction"])
	}

	instructions := map[float64]string{published: "Published instruction.", candidate: "Candidate instruction."}
	// asked sends body and returns the chat's id and the answer's id and version, checking the
	// provider got the instruction of that version.
	asked := func(t *testing.T, body map[string]any) (chatID, answer string, version float64) {
		t.Helper()
		before := len(systemPrompts(fake))
		res, chat := a.chat(t, body)
		if chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		agent := chat["agent"].(map[string]any)
		version = agent["version"].(float64)
		if prompts := systemPrompts(fake)[before:]; len(prompts) != 1 || !containsPrompt(prompts[0], instructions[version]) {
			t.Fatalf("version %v answered, the provider got %q", version, prompts)
		}
		return chat["chat_id"].(string), agent["uuid"].(string), version
	}
	const chatsCount = 40
	byVersion := map[float64][]string{}
	var answers = map[float64][]string{}
	for range chatsCount {
		chatID, answer, v := asked(t, map[string]any{"message": "Hello"})
		if want := map[bool]float64{true: candidate, false: published}[agents.InShare(chatID, 0.5)]; v != want {
			t.Fatalf("chat %s began on version %v, its hash gives %v", chatID, v, want)
		}
		again, _, v2 := asked(t, map[string]any{"message": "And then?", "chat_id": chatID})
		if again != chatID || v2 != v {
			t.Fatalf("chat %s began on version %v and went on with %v", chatID, v, v2)
		}
		byVersion[v] = append(byVersion[v], chatID)
		answers[v] = append(answers[v], answer)
	}
	// The OpenAI door's new chats are split the same way.
	door := map[float64]int{}
	for range 4 {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Key: b.key,
			Body: map[string]any{"model": "agent:" + a.botID, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}})
		expect(t, res, http.StatusOK, "")
		ext := res.JSON(t)["agentplane"].(map[string]any)
		if want := map[bool]float64{true: candidate, false: published}[agents.InShare(ext["chat_id"].(string), 0.5)]; ext["version"] != want {
			t.Fatalf("the OpenAI door's chat %v answered with version %v, its hash gives %v", ext["chat_id"], ext["version"], want)
		}
		door[ext["version"].(float64)]++
	}
	if len(byVersion[published]) == 0 || len(byVersion[candidate]) == 0 {
		t.Fatalf("chats by version %v: both versions should have some of %d", byVersion, chatsCount)
	}

	vote := func(message, kind string) {
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/chat/message/vote", Key: b.key,
			Body: a.body(map[string]any{"message_id": message, "voter_id": "ana", "vote_type": kind})})
		expect(t, res, http.StatusOK, "")
	}
	vote(answers[candidate][0], "up")
	vote(answers[published][0], "down")
	key := func(v float64) string { return strconv.Itoa(int(v)) }
	s := a.statsOnce(t, "summary", "summary", "", func(s map[string]any) bool {
		vs, _ := s["versions"].(map[string]any)
		c, _ := vs[key(candidate)].(map[string]any)
		p, _ := vs[key(published)].(map[string]any)
		return s["agent_messages"] == 2.0*chatsCount+4 && c["upvotes"] == 1.0 && p["downvotes"] == 1.0
	})["stats"].(map[string]any)
	vs := s["versions"].(map[string]any)
	if len(vs) != 2 {
		t.Fatalf("versions %v", vs)
	}
	sum := map[string]float64{}
	for v, chats := range byVersion {
		got := vs[key(v)].(map[string]any)
		if want := 2*len(chats) + door[v]; got["agent_messages"] != float64(want) {
			t.Errorf("version %v: %v answers, want %d", v, got["agent_messages"], want)
		}
		for _, k := range []string{"agent_messages", "tokens", "upvotes", "downvotes"} {
			sum[k] += got[k].(float64)
		}
	}
	if sum["agent_messages"] != s["agent_messages"] || sum["upvotes"] != 1 || sum["downvotes"] != 1 {
		t.Errorf("versions add up to %v, the summary has %v agent messages", sum, s["agent_messages"])
	}

	if bot := a.update(t, map[string]any{"canary": map[string]any{"version": 0}}); bot["canary"] != nil {
		t.Fatalf("canary after removal %v", bot["canary"])
	}
	if _, _, v := asked(t, map[string]any{"message": "Still there?", "chat_id": byVersion[candidate][0]}); v != published {
		t.Fatalf("a canary chat after the canary ended answered with version %v, want %v", v, published)
	}
}
