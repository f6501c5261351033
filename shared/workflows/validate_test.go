package workflows_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/workflows"
)

var eventTypes = []string{"deal.created", "deal.won", "bot.created"}

// post is a valid send_message action.
const post = `{"type":"send_message","params":{"message":"hi"}}`

// manual returns a manual definition running actions.
func manual(actions ...string) string {
	return `{"trigger_type":"manual","actions":[` + strings.Join(actions, ",") + `]}`
}

// when returns a manual definition with one condition and a valid action.
func when(condition string) string {
	return `{"conditions":[` + condition + `],"actions":[` + post + `]}`
}

// schedule returns a schedule definition with trigger_config config and a valid action.
func schedule(config string) string {
	return `{"trigger_type":"schedule","trigger_config":` + config + `,"actions":[` + post + `]}`
}

// cronEvery returns a schedule definition running on spec.
func cronEvery(spec string) string {
	return schedule(`{"cron":"` + spec + `"}`)
}

func decode(t *testing.T, js string) *workflows.Definition {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var d workflows.Definition
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	return &d
}

// problemFields validates js and returns the field of every problem, failing on a non-Invalid error.
func problemFields(t *testing.T, js string) []string {
	t.Helper()
	err := decode(t, js).Validate(eventTypes)
	if err == nil {
		return nil
	}
	e := apperr.As(err)
	if e.Kind != apperr.Invalid {
		t.Fatalf("kind %v, want Invalid: %v", e.Kind, err)
	}
	fields := make([]string, len(e.Details))
	for i, d := range e.Details {
		fields[i] = d.Field
	}
	return fields
}

func TestValidateAccepts(t *testing.T) {
	for _, tc := range []struct{ name, definition string }{
		{"EventTrigger", `{"trigger_type":"event","trigger_event":"deal.won",
			"conditions":[{"field":"data.value","operator":"gte","value":1000}],"actions":[` + post + `]}`},
		{"ScheduleTrigger", schedule(`{"cron":"0 9 * * 1-5","timezone":"Europe/Berlin"}`)},
		{"ManualTrigger", manual(post)},
		{"DraftWithoutActions", `{"actions":[]}`},
		{"DraftWithoutActionsField", `{}`},
		{"AllFiveActionTypes", `{"trigger_type":"event","trigger_event":"deal.created","actions":[
			{"type":"webhook","params":{"url":"https://example.com/hook","headers":{"Authorization":"Bearer {{secrets.token}}"},
				"body":{"deal":"{{event.data.uuid}}","tags":["a","{{event.bot_id}}"]},"timeout_seconds":10}},
			{"type":"send_message","params":{"message":"Deal {{event.data.title}} won","chat_id":"c1","mode":"reply"}},
			{"type":"create_deal","params":{"title":"Follow-up","value":250.5,"currency":"EUR","status":"open","stage":"lead",
				"contact":{"name":"Ada","email":"ada@example.com","phone":"+49 30 1","company":"ACME"}}},
			{"type":"update_deal","params":{"deal_id":"{{event.data.uuid}}","value":"{{event.data.value}}","status":"won"}},
			{"type":"add_memory","params":{"title":"Won deal","type":"text","source":"{{event.data.title}}","tags":["deals"]},
				"continue_on_error":true}]}`},
		{"EveryOperator", `{"conditions":[
			{"field":"data.status","operator":"eq","value":"won"},
			{"field":"data.status","operator":"ne","value":"lost"},
			{"field":"data.value","operator":"gt","value":1},
			{"field":"data.value","operator":"lt","value":1e6},
			{"field":"data.title","operator":"contains","value":"vip"},
			{"field":"data.stage","operator":"in","value":["lead","won"]},
			{"field":"bot_id","operator":"exists","value":false}],"actions":[` + post + `]}`},
		{"WebhookURLWithPlaceholderNeedsOnlyTheScheme", manual(`{"type":"webhook","params":{"url":"https://{{event.data.host}}/hook"}}`)},
		{"WebhookBodyString", manual(`{"type":"webhook","params":{"url":"http://example.com","body":"id={{event.data.uuid}}"}}`)},
		{"DealCurrencyTemplate", manual(`{"type":"create_deal","params":{"title":"t","currency":"{{event.data.currency}}"}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fields := problemFields(t, tc.definition); fields != nil {
				t.Fatalf("refused at %v", fields)
			}
		})
	}
}

func TestValidateAppliesDefaults(t *testing.T) {
	t.Run("TriggerTypeManualAndEmptyLists", func(t *testing.T) {
		d := &workflows.Definition{Actions: []workflows.Action{{Type: " send_message ", Params: map[string]any{"message": "hi"}}}}
		if err := d.Validate(eventTypes); err != nil {
			t.Fatal(err)
		}
		if d.TriggerType != workflows.TriggerTypeManual || d.TriggerConfig == nil || d.Conditions == nil || d.Actions[0].Type != workflows.ActionSendMessage {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("ScheduleTimezoneUTC", func(t *testing.T) {
		d := decode(t, cronEvery("@daily"))
		if err := d.Validate(eventTypes); err != nil {
			t.Fatal(err)
		}
		if d.TriggerConfig["timezone"] != workflows.DefaultTimezone {
			t.Fatalf("timezone %v", d.TriggerConfig["timezone"])
		}
	})
	t.Run("ExistsTrue", func(t *testing.T) {
		d := decode(t, when(`{"field":"data.status","operator":"exists"}`))
		if err := d.Validate(eventTypes); err != nil {
			t.Fatal(err)
		}
		if d.Conditions[0].Value.V != true {
			t.Fatalf("value %v", d.Conditions[0].Value)
		}
	})
	t.Run("SendMessageModePost", func(t *testing.T) {
		d := decode(t, manual(post))
		if err := d.Validate(eventTypes); err != nil {
			t.Fatal(err)
		}
		if d.Actions[0].Params["mode"] != workflows.MessageModePost {
			t.Fatalf("mode %v", d.Actions[0].Params["mode"])
		}
	})
}

func TestValidateRefuses(t *testing.T) {
	webhook := func(params string) string { return manual(`{"type":"webhook","params":` + params + `}`) }
	action := func(typ, params string) string { return manual(`{"type":"` + typ + `","params":` + params + `}`) }
	for _, tc := range []struct {
		name, definition string
		fields           []string
	}{
		{"UnknownTriggerType", `{"trigger_type":"hourly","actions":[` + post + `]}`, []string{"trigger_type"}},
		{"EventTriggerWithoutEvent", `{"trigger_type":"event","actions":[` + post + `]}`, []string{"trigger_event"}},
		{"EventTriggerWithUnknownEvent", `{"trigger_type":"event","trigger_event":"deal.lost","actions":[` + post + `]}`, []string{"trigger_event"}},
		{"TriggerEventOnManualTrigger", `{"trigger_event":"deal.won","actions":[` + post + `]}`, []string{"trigger_event"}},
		{"TriggerEventOnScheduleTrigger", `{"trigger_type":"schedule","trigger_event":"deal.won","trigger_config":{"cron":"@daily"},"actions":[` + post + `]}`, []string{"trigger_event"}},
		{"ConfigOnManualTrigger", `{"trigger_config":{"cron":"@daily"},"actions":[` + post + `]}`, []string{"trigger_config.cron"}},
		{"ScheduleWithoutCron", schedule(`{}`), []string{"trigger_config.cron"}},
		{"CronNotAString", schedule(`{"cron":5}`), []string{"trigger_config.cron"}},
		{"UnknownScheduleSetting", schedule(`{"cron":"@daily","jitter":"5m"}`), []string{"trigger_config.jitter"}},
		{"TimezoneNotAString", schedule(`{"cron":"@daily","timezone":1}`), []string{"trigger_config.timezone"}},
		{"UnknownTimezone", schedule(`{"cron":"@daily","timezone":"Mars/Olympus"}`), []string{"trigger_config.timezone"}},
		{"LocalTimezone", schedule(`{"cron":"@daily","timezone":"Local"}`), []string{"trigger_config.timezone"}},
		{"TooManyConditions", when(strings.Repeat(`{"field":"a","operator":"exists"},`, workflows.MaxConditions) + `{"field":"a","operator":"exists"}`), []string{"conditions"}},
		{"ConditionWithoutField", when(`{"operator":"eq","value":1}`), []string{"conditions[0].field"}},
		{"ConditionFieldNotAPath", when(`{"field":"data..status","operator":"eq","value":1}`), []string{"conditions[0].field"}},
		{"ConditionFieldTooLong", when(`{"field":"` + strings.Repeat("a", workflows.MaxFieldPathLen+1) + `","operator":"eq","value":1}`), []string{"conditions[0].field"}},
		{"UnknownOperator", when(`{"field":"a","operator":"like","value":"x"}`), []string{"conditions[0].operator"}},
		{"EqWithoutValue", when(`{"field":"a","operator":"eq"}`), []string{"conditions[0].value"}},
		{"ExistsWithNonBoolean", when(`{"field":"a","operator":"exists","value":"yes"}`), []string{"conditions[0].value"}},
		{"GtWithString", when(`{"field":"a","operator":"gt","value":"10"}`), []string{"conditions[0].value"}},
		{"InWithEmptyArray", when(`{"field":"a","operator":"in","value":[]}`), []string{"conditions[0].value"}},
		{"InWithString", when(`{"field":"a","operator":"in","value":"a,b"}`), []string{"conditions[0].value"}},
		{"ContainsWithBoolean", when(`{"field":"a","operator":"contains","value":true}`), []string{"conditions[0].value"}},
		{"TooManyActions", manual(slices.Repeat([]string{post}, workflows.MaxActions+1)...), []string{"actions"}},
		{"UnknownActionType", manual(post, `{"type":"send_email","params":{}}`), []string{"actions[1].type"}},
		{"ActionWithoutParams", manual(`{"type":"webhook"}`), []string{"actions[0].params"}},
		{"UnknownParam", webhook(`{"url":"https://example.com","method":"PUT"}`), []string{"actions[0].params.method"}},
		{"UnbalancedPlaceholder", action("send_message", `{"message":"Hi {{event.data.name"}`), []string{"actions[0].params.message"}},
		{"UnbalancedPlaceholderInBody", webhook(`{"url":"https://example.com","body":{"a":["ok","x}}"]}}`), []string{"actions[0].params.body.a[1]"}},
		{"WebhookWithoutURL", webhook(`{}`), []string{"actions[0].params.url"}},
		{"WebhookURLNotHTTP", manual(post, `{"type":"webhook","params":{"url":"ftp://example.com/x"}}`), []string{"actions[1].params.url"}},
		{"WebhookURLWithoutHost", webhook(`{"url":"https:///path"}`), []string{"actions[0].params.url"}},
		{"WebhookURLRelative", webhook(`{"url":"/hook"}`), []string{"actions[0].params.url"}},
		{"WebhookTemplateURLWithoutScheme", webhook(`{"url":"{{event.data.url}}"}`), []string{"actions[0].params.url"}},
		{"HeadersNotAnObject", webhook(`{"url":"https://example.com","headers":["a"]}`), []string{"actions[0].params.headers"}},
		{"HeaderValueNotAString", webhook(`{"url":"https://example.com","headers":{"X-Count":1}}`), []string{"actions[0].params.headers.X-Count"}},
		{"HeaderNameNotAToken", webhook(`{"url":"https://example.com","headers":{"Bad Name":"x"}}`), []string{"actions[0].params.headers.Bad Name"}},
		{"HeaderValueWithLineBreak", webhook(`{"url":"https://example.com","headers":{"X-A":"a\r\nHost: evil"}}`), []string{"actions[0].params.headers.X-A"}},
		{"HostHeader", webhook(`{"url":"https://example.com","headers":{"Host":"evil"}}`), []string{"actions[0].params.headers.Host"}},
		{"ContentLengthHeader", webhook(`{"url":"https://example.com","headers":{"content-length":"1"}}`), []string{"actions[0].params.headers.content-length"}},
		{"TransferEncodingHeader", webhook(`{"url":"https://example.com","headers":{"Transfer-Encoding":"chunked"}}`), []string{"actions[0].params.headers.Transfer-Encoding"}},
		{"AgentplaneHeader", webhook(`{"url":"https://example.com","headers":{"X-Agentplane-Signature":"x"}}`), []string{"actions[0].params.headers.X-Agentplane-Signature"}},
		{"BodyNotStringOrObject", webhook(`{"url":"https://example.com","body":[1]}`), []string{"actions[0].params.body"}},
		{"TimeoutTooLong", webhook(`{"url":"https://example.com","timeout_seconds":31}`), []string{"actions[0].params.timeout_seconds"}},
		{"TimeoutTooShort", webhook(`{"url":"https://example.com","timeout_seconds":0.5}`), []string{"actions[0].params.timeout_seconds"}},
		{"MessageMissing", action("send_message", `{"chat_id":"c"}`), []string{"actions[0].params.message"}},
		{"MessageEmpty", action("send_message", `{"message":"  "}`), []string{"actions[0].params.message"}},
		{"MessageTooLong", action("send_message", `{"message":"`+strings.Repeat("é", workflows.MaxMessageLen+1)+`"}`), []string{"actions[0].params.message"}},
		{"ChatIDNotAString", action("send_message", `{"message":"hi","chat_id":7}`), []string{"actions[0].params.chat_id"}},
		{"ChannelWithoutChat", action("send_message", `{"message":"hi","channel_id":"c1"}`), []string{"actions[0].params.chat_id"}},
		{"UnknownMessageMode", action("send_message", `{"message":"hi","mode":"broadcast"}`), []string{"actions[0].params.mode"}},
		{"DealWithoutTitle", action("create_deal", `{"value":1}`), []string{"actions[0].params.title"}},
		{"DealValueNegative", action("create_deal", `{"title":"t","value":-1}`), []string{"actions[0].params.value"}},
		{"DealValuePlainString", action("create_deal", `{"title":"t","value":"100"}`), []string{"actions[0].params.value"}},
		{"DealCurrencyLowercase", action("create_deal", `{"title":"t","currency":"eur"}`), []string{"actions[0].params.currency"}},
		{"DealUnknownStatus", action("create_deal", `{"title":"t","status":"pending"}`), []string{"actions[0].params.status"}},
		{"DealStageNotAString", action("create_deal", `{"title":"t","stage":3}`), []string{"actions[0].params.stage"}},
		{"ContactNotAnObject", action("create_deal", `{"title":"t","contact":"Ada"}`), []string{"actions[0].params.contact"}},
		{"ContactUnknownField", action("create_deal", `{"title":"t","contact":{"address":"x"}}`), []string{"actions[0].params.contact.address"}},
		{"ContactFieldNotAString", action("create_deal", `{"title":"t","contact":{"phone":123}}`), []string{"actions[0].params.contact.phone"}},
		{"UpdateDealWithoutDealID", action("update_deal", `{"status":"won"}`), []string{"actions[0].params.deal_id"}},
		{"UpdateDealWithoutChanges", action("update_deal", `{"deal_id":"{{event.data.uuid}}"}`), []string{"actions[0].params"}},
		{"UpdateDealUnknownStatus", action("update_deal", `{"deal_id":"d","status":"closed"}`), []string{"actions[0].params.status"}},
		{"UpdateDealContact", action("update_deal", `{"deal_id":"d","title":"t","contact":{}}`), []string{"actions[0].params.contact"}},
		{"MemoryWithoutTitle", action("add_memory", `{"type":"text","source":"s"}`), []string{"actions[0].params.title"}},
		{"MemoryWithoutType", action("add_memory", `{"title":"t","source":"s"}`), []string{"actions[0].params.type"}},
		{"MemoryUnknownType", action("add_memory", `{"title":"t","type":"video","source":"s"}`), []string{"actions[0].params.type"}},
		{"MemoryEmptySource", action("add_memory", `{"title":"t","type":"url","source":""}`), []string{"actions[0].params.source"}},
		{"TagsNotAnArray", action("add_memory", `{"title":"t","type":"text","source":"s","tags":"a"}`), []string{"actions[0].params.tags"}},
		{"TooManyTags", action("add_memory", `{"title":"t","type":"text","source":"s","tags":[`+strings.Repeat(`"a",`, workflows.MaxTags)+`"a"]}`), []string{"actions[0].params.tags"}},
		{"TagNotAString", action("add_memory", `{"title":"t","type":"text","source":"s","tags":["a",1]}`), []string{"actions[0].params.tags[1]"}},
		{"TagTooLong", action("add_memory", `{"title":"t","type":"text","source":"s","tags":["`+strings.Repeat("a", workflows.MaxTagLen+1)+`"]}`), []string{"actions[0].params.tags[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fields := problemFields(t, tc.definition); !slices.Equal(fields, tc.fields) {
				t.Fatalf("problems at %v, want %v", fields, tc.fields)
			}
		})
	}
}

func TestValidateReportsAllProblemsTogether(t *testing.T) {
	fields := problemFields(t, `{"trigger_type":"schedule","trigger_config":{"cron":"61 * * * *"},
		"conditions":[{"field":"data.value","operator":"gt","value":"big"}],
		"actions":[{"type":"webhook","params":{"url":"mailto:x@example.com","headers":{"Host":"h"}}},{"type":"fax","params":{}}]}`)
	want := []string{"trigger_config.cron", "conditions[0].value", "actions[0].params.url", "actions[0].params.headers.Host", "actions[1].type"}
	if !slices.Equal(fields, want) {
		t.Fatalf("problems at %v, want %v", fields, want)
	}
}

func TestValidateCron(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		ok         bool
	}{
		{"EveryFiveMinutes", "*/5 * * * *", true},
		{"WeekdayMornings", "0 9 * * 1-5", true},
		{"Hourly", "@hourly", true},
		{"EveryHour", "@every 1h", true},
		{"EveryMinute", "@every 1m", true},
		{"MinuteOutOfRange", "61 * * * *", false},
		{"EveryThirtySeconds", "@every 30s", false},
		{"SixFields", "0 0 9 * * *", false},
		{"CronTZPrefix", "CRON_TZ=UTC 0 9 * * *", false},
		{"TZPrefix", "TZ=Europe/Berlin 0 9 * * *", false},
		{"Empty", " ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := problemFields(t, cronEvery(tc.spec))
			if tc.ok && fields != nil {
				t.Fatalf("refused at %v", fields)
			}
			if !tc.ok && !slices.Equal(fields, []string{"trigger_config.cron"}) {
				t.Fatalf("problems at %v, want [trigger_config.cron]", fields)
			}
		})
	}
}
