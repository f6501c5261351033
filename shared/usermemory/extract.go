package usermemory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/llm"
)

// Fact is a memory as extraction finds it, before it is merged with what is known.
type Fact struct {
	Type    string `json:"type"`
	Subject string `json:"subject"`
	Content string `json:"content"`
}

// MaxFacts bounds the facts one message may add.
const MaxFacts = 10

// sentences cuts text into sentences, each with its closing mark ('?' tells a question).
func sentences(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if r == '.' || r == '!' || r == '?' || r == '\n' || r == ';' {
			if s := strings.TrimSpace(text[start : i+utf8.RuneLen(r)]); s != "" {
				out = append(out, s)
			}
			start = i + utf8.RuneLen(r)
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// firstPerson finds a statement about its author, or a request to remember something.
var firstPerson = regexp.MustCompile(`(?i)\b(i|i'm|i’m|i've|i’ve|i'd|i’d|my|me|mine|remember)\b`)

// Said reports whether text may say something durable about its author: a sentence of it that
// is not a question speaks in the first person or asks to remember. Only such turns are
// queued for extraction, so questions alone cost nothing.
func Said(text string) bool {
	for _, s := range sentences(text) {
		if !strings.HasSuffix(s, "?") && firstPerson.MatchString(s) {
			return true
		}
	}
	return false
}

// The offline rules: explicit statements only.
var (
	nameIs   = regexp.MustCompile(`(?i)\b(?:my name is|my name's|call me)\s+(.+)`)
	prefer   = regexp.MustCompile(`(?i)\bi(?:\s+would|'d|’d)?\s+prefer\s+(.+)`)
	remember = regexp.MustCompile(`(?i)^(?:please\s+|and\s+|also\s+)*remember\s+(?:that\s+)?(.+)`)
	// procedural and episodic tell the type of something to remember.
	procedural = regexp.MustCompile(`(?i)^(?:always|never|don't|do not|please|answer|reply|write|use|call|email|send|contact|address)\b`)
	episodic   = regexp.MustCompile(`(?i)\b(?:yesterday|last (?:week|month|year|time)|ago|was|were|had|did|broke|arrived|happened|ordered|returned)\b`)
	// notAName are words after "my name is" that do not start a name.
	notAName = []string{"not", "a", "an", "the", "secret", "private", "none", "irrelevant", "unimportant", "what", "who", "and", "but"}
)

// Rules are the facts the offline rules find in text: a name ("my name is", "call me"), a
// preference ("I prefer"), and what the user asks to be remembered ("remember that ...").
// Questions and anything else say nothing.
func Rules(text string) []Fact {
	var out []Fact
	for _, s := range sentences(text) {
		if strings.HasSuffix(s, "?") {
			continue
		}
		body := strings.TrimRight(s, ".!;\n ")
		if m := nameIs.FindStringSubmatch(body); m != nil {
			if name := nameOf(m[1]); name != "" {
				out = append(out, Fact{Type: Semantic, Subject: "name", Content: "The user's name is " + name + "."})
			}
			continue
		}
		if m := remember.FindStringSubmatch(body); m != nil {
			what := clean(m[1])
			typ := Semantic
			switch {
			case procedural.MatchString(what):
				typ = Procedural
			case episodic.MatchString(what):
				typ = Episodic
			}
			if what != "" {
				out = append(out, Fact{Type: typ, Content: "The user asked to remember: " + what + "."})
			}
			continue
		}
		if m := prefer.FindStringSubmatch(body); m != nil {
			if what := theirs(clean(m[1])); what != "" {
				out = append(out, Fact{Type: Semantic, Content: "The user prefers " + what + "."})
			}
		}
	}
	return capped(out)
}

// nameOf is the name at the start of s: up to three words of letters (', - and . inside),
// capitalized; "" when s does not start with one.
func nameOf(s string) string {
	var words []string
	for _, raw := range strings.Fields(s) {
		w := strings.TrimRight(raw, ",")
		if len(words) == 3 || !isNameWord(w) || slices.Contains(notAName, strings.ToLower(w)) {
			break
		}
		r, size := utf8.DecodeRuneInString(w)
		words = append(words, string(unicode.ToUpper(r))+w[size:])
		if raw != w {
			break
		}
	}
	return strings.Join(words, " ")
}

func isNameWord(w string) bool {
	if w == "" || utf8.RuneCountInString(w) > 20 {
		return false
	}
	for i, r := range w {
		if !unicode.IsLetter(r) && (i == 0 || !strings.ContainsRune("'’-.", r)) {
			return false
		}
	}
	return true
}

// clean is s as one line of at most a memory's length, without the closing mark.
func clean(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimRight(s, ".!;, ")
	if r := []rune(s); len(r) > MaxContent-40 {
		s = string(r[:MaxContent-40])
	}
	return s
}

// theirs is s of the user's, said of them: "my" becomes "their", "me" "them".
func theirs(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		switch strings.ToLower(w) {
		case "my":
			words[i] = "their"
		case "me":
			words[i] = "them"
		case "mine":
			words[i] = "theirs"
		}
	}
	return strings.Join(words, " ")
}

// capped is the first MaxFacts of facts.
func capped(facts []Fact) []Fact { return facts[:min(len(facts), MaxFacts)] }

// schema is the JSON schema of the model's answer (strict structured output: every property
// required, none other allowed).
var schema = llm.Schema{Name: "user_memories", Schema: map[string]any{
	"type": "object", "additionalProperties": false, "required": []any{"memories"},
	"properties": map[string]any{"memories": map[string]any{
		"type": "array", "maxItems": MaxFacts,
		"items": map[string]any{
			"type": "object", "additionalProperties": false, "required": []any{"type", "subject", "content"},
			"properties": map[string]any{
				"type":    map[string]any{"type": "string", "enum": []any{Semantic, Episodic, Procedural}},
				"subject": map[string]any{"type": "string", "description": "a short lowercase key for a fact with one value at a time (name, email, language, timezone, company, role), else empty"},
				"content": map[string]any{"type": "string", "description": "the fact in one sentence, in the third person: The user ..."},
			},
		},
	}},
}}

// instruction tells the model what to extract.
const instruction = `You keep an assistant's long-term memory of one user. From the user's message below, extract only durable facts the user states explicitly about themselves: preferences, personal facts (name, language, location, job), past issues they had, and how they want to be helped. Do not extract questions, requests for this conversation only, guesses, or facts about other people or products. Write each fact as one sentence in the third person ("The user prefers email."). type: semantic for facts and preferences, episodic for things that happened to the user, procedural for how they want to be helped. subject: a short lowercase key when the fact has one value at a time (name, email, language, timezone, company, role), else "". Leave out what is already known. Answer {"memories": []} when there is nothing durable.`

// request is the model request extracting the facts of text, told what is known.
func request(text string, known []Memory) llm.Request {
	var sys strings.Builder
	sys.WriteString(instruction)
	if len(known) > 0 {
		sys.WriteString("\n\nAlready known:")
		for _, m := range known[:min(len(known), 30)] {
			sys.WriteString("\n- " + m.Content)
		}
	}
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: sys.String()}, {Role: llm.RoleUser, Content: text}},
		Schema: &schema, MaxTokens: 800}
}

// ErrMalformed is a model's answer that is not the schema's: it is dropped, never stored.
var ErrMalformed = errors.New("the model's memories are not the JSON schema asked for")

// parse reads the model's answer strictly: one JSON object of the schema, with no other field,
// nothing after it, every type one of Types, every content one line of at most MaxContent
// characters. Anything else is ErrMalformed.
func parse(answer string) ([]Fact, error) {
	dec := json.NewDecoder(strings.NewReader(answer))
	dec.DisallowUnknownFields()
	var out struct {
		Memories *[]Fact `json:"memories"`
	}
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the object", ErrMalformed)
	}
	if out.Memories == nil || len(*out.Memories) > MaxFacts {
		return nil, fmt.Errorf("%w: memories missing or more than %d", ErrMalformed, MaxFacts)
	}
	facts := *out.Memories
	for i, f := range facts {
		f.Content, f.Subject = strings.TrimSpace(f.Content), Normalize(f.Subject)
		switch {
		case !slices.Contains(Types, f.Type):
			return nil, fmt.Errorf("%w: memories[%d].type %q", ErrMalformed, i, f.Type)
		case f.Content == "" || utf8.RuneCountInString(f.Content) > MaxContent || strings.ContainsAny(f.Content, "\r\n"):
			return nil, fmt.Errorf("%w: memories[%d].content is empty, too long or not one line", ErrMalformed, i)
		case utf8.RuneCountInString(f.Subject) > MaxSubject:
			return nil, fmt.Errorf("%w: memories[%d].subject is too long", ErrMalformed, i)
		}
		facts[i] = f
	}
	return facts, nil
}
