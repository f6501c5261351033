package workflows

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// actionChecks holds the params rules of each action type; unknown keys are refused before.
var actionChecks = map[string]func(params){
	ActionWebhook:     checkWebhook,
	ActionSendMessage: checkSendMessage,
	ActionCreateDeal:  checkCreateDeal,
	ActionUpdateDeal:  checkUpdateDeal,
	ActionAddMemory:   checkAddMemory,
	ActionRequestHandoff: func(ps params) {
		ps.required("chat_id")
		ps.optional("reason")
		if urgency, ok := ps.optional("urgency"); ok && !isTemplate(urgency) {
			ps.choice("urgency", urgency, []string{"low", "normal", "high"})
		}
	},
}

// tokenChars are the characters of an RFC 7230 token (tchar).
const tokenChars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// params is the params object of one action, with the problems it reports and its path.
// A key whose value is null counts as absent.
type params struct {
	problems *apperr.Problems
	path     string
	m        map[string]any
}

func (ps params) add(key, format string, args ...any) {
	ps.problems.Add(ps.path+"."+key, format, args...)
}

func (ps params) value(key string) (any, bool) {
	v := ps.m[key]
	return v, v != nil
}

// required returns the string at key, reporting it missing, empty or malformed.
func (ps params) required(key string) (string, bool) {
	v, ok := ps.value(key)
	if !ok {
		ps.add(key, "is required")
		return "", false
	}
	s, ok := ps.text(key, v)
	if ok && strings.TrimSpace(s) == "" {
		ps.add(key, "must not be empty")
		return "", false
	}
	return s, ok
}

// optional returns the string at key when it is present and well formed.
func (ps params) optional(key string) (string, bool) {
	v, ok := ps.value(key)
	if !ok {
		return "", false
	}
	return ps.text(key, v)
}

// text returns v when it is a string with balanced placeholders, else reports key.
func (ps params) text(key string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		ps.add(key, "must be a string")
		return "", false
	}
	if !balanced(s) {
		ps.add(key, "has unbalanced {{ and }}")
		return "", false
	}
	return s, true
}

// choice reports key when s is not one of allowed.
func (ps params) choice(key, s string, allowed []string) {
	if !slices.Contains(allowed, s) {
		ps.add(key, "must be one of: %s", strings.Join(allowed, ", "))
	}
}

// templates reports every string inside v, at any depth, with unbalanced placeholders.
func (ps params) templates(key string, v any) {
	switch v := v.(type) {
	case string:
		if !balanced(v) {
			ps.add(key, "has unbalanced {{ and }}")
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			ps.templates(key+"."+k, v[k])
		}
	case []any:
		for i, e := range v {
			ps.templates(fmt.Sprintf("%s[%d]", key, i), e)
		}
	}
}

func checkWebhook(ps params) {
	if u, ok := ps.required("url"); ok && (len(u) > MaxURLLength || !webhookURL(u)) {
		ps.add("url", "must be an absolute http or https URL with a host, at most %d characters", MaxURLLength)
	}
	if v, ok := ps.value("headers"); ok {
		checkHeaders(ps, v)
	}
	if v, ok := ps.value("body"); ok {
		checkBody(ps, v)
	}
	if v, ok := ps.value("timeout_seconds"); ok {
		if n, isNumber := number(v); !isNumber || n < MinWebhookTimeoutSeconds || n > MaxWebhookTimeoutSeconds {
			ps.add("timeout_seconds", "must be a number from %d to %d", MinWebhookTimeoutSeconds, MaxWebhookTimeoutSeconds)
		}
	}
}

// webhookURL reports whether raw is an absolute http(s) URL with a host; a URL holding
// placeholders only needs the scheme, as its host may come from the template.
func webhookURL(raw string) bool {
	if strings.Contains(raw, "{{") {
		lower := strings.ToLower(raw)
		return strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")
	}
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}

func checkHeaders(ps params, v any) {
	headers, ok := v.(map[string]any)
	if !ok {
		ps.add("headers", "must be an object of header names to string values")
		return
	}
	for _, name := range sortedKeys(headers) {
		key := "headers." + name
		switch {
		case !isToken(name):
			ps.add(key, "is not a valid header name")
		case reservedHeader(name):
			ps.add(key, "is set by agentplane and cannot be overridden")
		}
		if s, ok := ps.text(key, headers[name]); ok && strings.ContainsAny(s, "\r\n\x00") {
			ps.add(key, "must not contain line breaks or NUL")
		}
	}
}

// isToken reports whether s is a non-empty RFC 7230 token: trimming every token character
// leaves nothing.
func isToken(s string) bool {
	return s != "" && strings.Trim(s, tokenChars) == ""
}

func reservedHeader(name string) bool {
	return strings.EqualFold(name, "Host") || strings.EqualFold(name, "Content-Length") ||
		strings.EqualFold(name, "Transfer-Encoding") || strings.HasPrefix(strings.ToLower(name), "x-agentplane-")
}

func checkBody(ps params, v any) {
	switch v.(type) {
	case string, map[string]any:
		ps.templates("body", v)
	default:
		ps.add("body", "must be a string or an object")
	}
}

func checkSendMessage(ps params) {
	if message, ok := ps.required("message"); ok && utf8.RuneCountInString(message) > MaxMessageLen {
		ps.add("message", "must be at most %d characters", MaxMessageLen)
	}
	_, chat := ps.optional("chat_id")
	if _, ok := ps.optional("channel_id"); ok && !chat {
		ps.add("chat_id", "is required with channel_id: the chat of the channel's conversation to deliver to ({{event.data.chat_id}} of a channel.message.sent event)")
	}
	if _, ok := ps.value("mode"); !ok {
		ps.m["mode"] = MessageModePost
	}
	if mode, ok := ps.optional("mode"); ok {
		ps.choice("mode", mode, MessageModes)
	}
}

func checkCreateDeal(ps params) {
	ps.required("title")
	checkDealFields(ps)
	if v, ok := ps.value("contact"); ok {
		checkContact(ps, v)
	}
}

func checkUpdateDeal(ps params) {
	ps.required("deal_id")
	present := func(key string) bool { _, ok := ps.value(key); return ok }
	if !slices.ContainsFunc(UpdatableDealFields, present) {
		ps.problems.Add(ps.path, "must set at least one of: %s", strings.Join(UpdatableDealFields, ", "))
	}
	ps.optional("title")
	checkDealFields(ps)
}

// checkDealFields checks the optional deal fields create_deal and update_deal share.
func checkDealFields(ps params) {
	if v, ok := ps.value("value"); ok {
		checkDealValue(ps, v)
	}
	if currency, ok := ps.optional("currency"); ok && !isTemplate(currency) && !currencyRE.MatchString(currency) {
		ps.add("currency", "must be a 3-letter uppercase code such as EUR, or a {{ }} template")
	}
	if status, ok := ps.optional("status"); ok {
		ps.choice("status", status, DealStatuses)
	}
	ps.optional("stage")
}

func checkDealValue(ps params, v any) {
	if n, ok := number(v); ok {
		if n < 0 {
			ps.add("value", "must not be negative")
		}
		return
	}
	if s, ok := v.(string); ok && isTemplate(s) {
		ps.text("value", s)
		return
	}
	ps.add("value", "must be a number of at least 0, or a {{ }} template")
}

func checkContact(ps params, v any) {
	contact, ok := v.(map[string]any)
	if !ok {
		ps.add("contact", "must be an object with %s", strings.Join(ContactFields, ", "))
		return
	}
	for _, key := range sortedKeys(contact) {
		if !slices.Contains(ContactFields, key) {
			ps.add("contact."+key, "is not a contact field; allowed: %s", strings.Join(ContactFields, ", "))
			continue
		}
		ps.text("contact."+key, contact[key])
	}
}

func checkAddMemory(ps params) {
	ps.required("title")
	if typ, ok := ps.required("type"); ok {
		ps.choice("type", typ, MemoryTypes)
	}
	ps.required("source")
	if v, ok := ps.value("tags"); ok {
		checkTags(ps, v)
	}
}

func checkTags(ps params, v any) {
	tags, ok := v.([]any)
	switch {
	case !ok:
		ps.add("tags", "must be an array of strings")
		return
	case len(tags) > MaxTags:
		ps.add("tags", "must have at most %d entries", MaxTags)
		return
	}
	for i, tag := range tags {
		key := fmt.Sprintf("tags[%d]", i)
		if s, ok := ps.text(key, tag); ok && (s == "" || utf8.RuneCountInString(s) > MaxTagLen) {
			ps.add(key, "must be 1 to %d characters", MaxTagLen)
		}
	}
}

func isTemplate(s string) bool {
	return strings.Contains(s, "{{")
}

// balanced reports whether every {{ in s is closed by a }} before the next {{ opens, and
// every }} closes one.
func balanced(s string) bool {
	open := false
	for i := 0; i+1 < len(s); i++ {
		switch s[i : i+2] {
		case "{{":
			if open {
				return false
			}
			open = true
			i++
		case "}}":
			if !open {
				return false
			}
			open = false
			i++
		}
	}
	return !open
}
