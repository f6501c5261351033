package tasks_test

import (
	"testing"
	"time"

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

// A task's id is what makes queueing it twice leave one task: the same work has the same id,
// other work another.
func TestTaskIDs(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 30, 5, 0, time.UTC)
	run := tasks.AgentRunPayload{ExecutionID: "e1", ProviderKey: "sk"}
	for _, tt := range []struct {
		name       string
		a, b       tasks.Task
		sameWork   bool
		wantTypeOf string
	}{
		{"IngestSameGeneration", tasks.NewSourceIngestTask("s", "g1"), tasks.NewSourceIngestTask("s", "g1"), true, tasks.TypeSourceIngest},
		{"IngestOtherGeneration", tasks.NewSourceIngestTask("s", "g1"), tasks.NewSourceIngestTask("s", "g2"), false, tasks.TypeSourceIngest},
		{"SyncSameDue", tasks.NewSourceSyncTask("s", at), tasks.NewSourceSyncTask("s", at), true, tasks.TypeSourceSync},
		{"SyncOtherDue", tasks.NewSourceSyncTask("s", at), tasks.NewSourceSyncTask("s", at.Add(time.Millisecond)), false, tasks.TypeSourceSync},
		{"SweepSameMinute", tasks.NewSourceSweepTask(at), tasks.NewSourceSweepTask(at.Add(50 * time.Second)), true, tasks.TypeSourceSweep},
		{"SweepNextMinute", tasks.NewSourceSweepTask(at), tasks.NewSourceSweepTask(at.Add(time.Minute)), false, tasks.TypeSourceSweep},
		{"RunOnce", tasks.NewAgentRunTask(run), tasks.NewAgentRunTask(run), true, tasks.TypeAgentRun},
		{"ResumeOncePerCycle", tasks.NewAgentRunResumeTask(run, 2), tasks.NewAgentRunResumeTask(run, 2), true, tasks.TypeAgentRun},
		{"ResumeNotTheStart", tasks.NewAgentRunTask(run), tasks.NewAgentRunResumeTask(run, 1), false, tasks.TypeAgentRun},
		{"ResumeOtherCycle", tasks.NewAgentRunResumeTask(run, 1), tasks.NewAgentRunResumeTask(run, 2), false, tasks.TypeAgentRun},
		{"RequeueSameMinute", tasks.NewAgentRunRequeueTask("e1", at), tasks.NewAgentRunRequeueTask("e1", at.Add(50*time.Second)), true, tasks.TypeAgentRun},
		{"RequeueNextMinute", tasks.NewAgentRunRequeueTask("e1", at), tasks.NewAgentRunRequeueTask("e1", at.Add(time.Minute)), false, tasks.TypeAgentRun},
		{"EvalRunRequeueSameMinute", tasks.NewEvalRunRequeueTask("r1", at), tasks.NewEvalRunRequeueTask("r1", at.Add(50*time.Second)), true, tasks.TypeEvalRun},
		{"EvalRunRequeueNextMinute", tasks.NewEvalRunRequeueTask("r1", at), tasks.NewEvalRunRequeueTask("r1", at.Add(time.Minute)), false, tasks.TypeEvalRun},
		{"EvalRunRequeueNotTheRun", tasks.NewEvalRunTask("r1"), tasks.NewEvalRunRequeueTask("r1", at), false, tasks.TypeEvalRun},
		{"WorkflowRun", tasks.NewWorkflowRunTask("r1"), tasks.NewWorkflowRunTask("r1"), true, tasks.TypeWorkflowRun},
		{"HeartbeatSameSlot", tasks.NewHeartbeatFireTask("h", at, false), tasks.NewHeartbeatFireTask("h", at, false), true, tasks.TypeHeartbeatFire},
		{"HeartbeatOtherSlot", tasks.NewHeartbeatFireTask("h", at, false), tasks.NewHeartbeatFireTask("h", at.Add(time.Minute), false), false, tasks.TypeHeartbeatFire},
		{"HeartbeatTriggerNotTheSlot", tasks.NewHeartbeatFireTask("h", at, false), tasks.NewHeartbeatFireTask("h", at, true), false, tasks.TypeHeartbeatFire},
		{"HeartbeatTriggersApart", tasks.NewHeartbeatFireTask("h", at, true), tasks.NewHeartbeatFireTask("h", at.Add(time.Millisecond), true), false, tasks.TypeHeartbeatFire},
		{"MemoryExtractOncePerMessage", tasks.NewMemoryExtractTask(said("m1", "My name is Ana.")), tasks.NewMemoryExtractTask(said("m1", "my name is ana")), true, tasks.TypeMemoryExtract},
		{"MemoryExtractOtherMessage", tasks.NewMemoryExtractTask(said("m1", "My name is Ana.")), tasks.NewMemoryExtractTask(said("m2", "My name is Ana.")), false, tasks.TypeMemoryExtract},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.a.Type != tt.wantTypeOf || tt.b.Type != tt.wantTypeOf {
				t.Fatalf("types %s and %s, want %s", tt.a.Type, tt.b.Type, tt.wantTypeOf)
			}
			if same := tt.a.ID == tt.b.ID; same != tt.sameWork {
				t.Errorf("ids %q and %q: same %v, want %v", tt.a.ID, tt.b.ID, same, tt.sameWork)
			}
		})
	}
}

// said is a user's message to extract memories from.
func said(messageID, text string) tasks.MemoryExtractPayload {
	return tasks.MemoryExtractPayload{ProjectID: "p", BotID: "b", UserUUID: "u", MessageID: messageID, Text: text}
}
