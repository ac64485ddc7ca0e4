package claudecode

import (
	"encoding/json"
)

// assistant is what an assistant line says about the model response it
// is part of.
type assistant struct {
	msgID, model string
	usage        *usage
	// failed is isApiErrorMessage: Claude Code's own message that the
	// request failed for good (retries exhausted, or not retryable).
	failed   bool
	status   *int   // apiErrorStatus
	category string // the failure's error category ("rate_limit", ...)
	text     string // the first text block: "API Error: ..." on failures
	toolUses []string
	cost     *float64 // costUSD, written by older versions
}

// usage is the Anthropic Messages API usage block. Its fields are
// exported for the stream's State.
type usage struct {
	Input       float64 `json:"i"`
	Output      float64 `json:"o"`
	CacheCreate float64 `json:"cw"`
	CacheRead   float64 `json:"cr"`
	// CacheCreate1h is the part of CacheCreate written for an hour
	// (usage.cache_creation.ephemeral_1h_input_tokens), nil when the line
	// does not split it.
	CacheCreate1h *float64 `json:"cw1h,omitempty"`
}

type rawMessage struct {
	ID      json.RawMessage `json:"id"`
	Model   json.RawMessage `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   json.RawMessage `json:"usage"`
}

type rawUsage struct {
	Input         json.RawMessage `json:"input_tokens"`
	Output        json.RawMessage `json:"output_tokens"`
	CacheCreate   json.RawMessage `json:"cache_creation_input_tokens"`
	CacheRead     json.RawMessage `json:"cache_read_input_tokens"`
	CacheCreation json.RawMessage `json:"cache_creation"`
}

// rawCacheCreation is how Claude Code 2.x splits cache writes by lifetime.
type rawCacheCreation struct {
	OneHour json.RawMessage `json:"ephemeral_1h_input_tokens"`
}

type rawBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	ID   string `json:"id"`
}

func readAssistant(r *rawLine) (*assistant, *fieldError) {
	a := &assistant{}
	var m rawMessage
	present, ok := object(r.Message, &m)
	if !present {
		return nil, &fieldError{"message", "no message"}
	}
	if !ok {
		return nil, &fieldError{"message", "not an object"}
	}
	var err *fieldError
	if a.msgID, err = str(m.ID, "message.id"); err != nil {
		return nil, err
	}
	if a.model, err = str(m.Model, "message.model"); err != nil {
		return nil, err
	}
	if a.usage, err = readUsage(m.Usage); err != nil {
		return nil, err
	}
	if a.failed, err = boolean(r.IsAPIErrorMessage, "isApiErrorMessage"); err != nil {
		return nil, err
	}
	if a.status, err = count(r.APIErrorStatus, "apiErrorStatus"); err != nil {
		return nil, err
	}
	if a.cost, err = number(r.CostUSD, "costUSD"); err != nil {
		return nil, err
	}
	// The category and the content are text for people: read when they
	// have the expected shape, never a reason to drop the line.
	a.category = lenientString(r.Error)
	a.readContent(m.Content)
	return a, nil
}

func readUsage(raw json.RawMessage) (*usage, *fieldError) {
	var ru rawUsage
	present, ok := object(raw, &ru)
	if !present {
		return nil, nil
	}
	if !ok {
		return nil, &fieldError{"message.usage", "not an object"}
	}
	u := &usage{}
	parts := []struct {
		dst   *float64
		raw   json.RawMessage
		field string
	}{
		{&u.Input, ru.Input, "input_tokens"}, {&u.Output, ru.Output, "output_tokens"},
		{&u.CacheCreate, ru.CacheCreate, "cache_creation_input_tokens"},
		{&u.CacheRead, ru.CacheRead, "cache_read_input_tokens"},
	}
	for _, p := range parts {
		v, err := number(p.raw, "message.usage."+p.field)
		if err != nil {
			return nil, err
		}
		if v != nil {
			*p.dst = *v
		}
	}
	var cc rawCacheCreation
	if present, ok := object(ru.CacheCreation, &cc); present && !ok {
		return nil, &fieldError{"message.usage.cache_creation", "not an object"}
	}
	v, err := number(cc.OneHour, "message.usage.cache_creation.ephemeral_1h_input_tokens")
	if err != nil {
		return nil, err
	}
	u.CacheCreate1h = v
	return u, nil
}

// readContent keeps the first text block and the tool_use ids.
func (a *assistant) readContent(raw json.RawMessage) {
	if absent(raw) {
		return
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		a.text = s
		return
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		var bl rawBlock
		if json.Unmarshal(b, &bl) != nil {
			continue
		}
		switch bl.Type {
		case "text":
			if a.text == "" {
				a.text = bl.Text
			}
		case "tool_use":
			a.toolUses = append(a.toolUses, bl.ID)
		}
	}
}
