package rules

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/orchstat/orchstat/rules/yamlast"
)

// Receiver is where notifications go. Exactly one of the kinds is set.
//
// URL, header values and command arguments may name environment variables
// as ${NAME}, so that secrets stay out of the rule file. They are expanded
// when a notification is sent, never when the file is checked.
type Receiver struct {
	Name string
	Kind string // "webhook", "alertmanager" or "command"

	URL     string            // webhook, alertmanager
	Headers map[string]string // webhook, alertmanager
	Argv    []string          // command
	Timeout time.Duration     // per attempt

	// SendResolved also notifies resolutions. Alertmanager receivers always
	// get them: Alertmanager needs endsAt to resolve an alert.
	SendResolved bool
	// AlertTTL is how far ahead of each check the endsAt of a firing alert
	// pushed to Alertmanager lies. Alertmanager resolves an alert whose
	// endsAt passes, so it must outlast the interval between checks.
	AlertTTL time.Duration
}

// Receiver kinds and their defaults.
const (
	KindWebhook      = "webhook"
	KindAlertmanager = "alertmanager"
	KindCommand      = "command"

	DefaultHTTPTimeout    = 10 * time.Second
	DefaultCommandTimeout = 30 * time.Second
	DefaultAlertTTL       = time.Hour
)

// Route decides which receivers get an alert, as Alertmanager's routing
// tree does: an alert goes to the first child route that matches it (to
// every matching child, while they say continue), or to the route itself
// when no child matches. Children inherit receiver, group_by and
// repeat_interval.
type Route struct {
	Receiver string
	// GroupBy are the labels whose values form a notification group; the
	// single label "..." groups by every label, one alert a group.
	GroupBy []string
	// RepeatInterval re-sends a group's notification while it keeps firing;
	// 0 never repeats.
	RepeatInterval time.Duration
	Match          map[string]string
	MatchRE        map[string]*regexp.Regexp
	Continue       bool
	Routes         []*Route
}

// Matches reports whether the route's own matchers accept labels.
func (r *Route) Matches(labels map[string]string) bool {
	for k, v := range r.Match {
		if labels[k] != v {
			return false
		}
	}
	for k, re := range r.MatchRE {
		if !re.MatchString(labels[k]) {
			return false
		}
	}
	return true
}

// Leaves returns the routes that take an alert with labels, each with the
// settings it inherits filled in. The root route always matches.
func (r *Route) Leaves(labels map[string]string) []*Route {
	if r == nil {
		return nil
	}
	return r.leaves(labels, *r)
}

func (r *Route) leaves(labels map[string]string, eff Route) []*Route {
	var out []*Route
	for _, ch := range r.Routes {
		if !ch.Matches(labels) {
			continue
		}
		e := *ch
		if e.Receiver == "" {
			e.Receiver = eff.Receiver
		}
		if e.GroupBy == nil {
			e.GroupBy = eff.GroupBy
		}
		if e.RepeatInterval == 0 {
			e.RepeatInterval = eff.RepeatInterval
		}
		out = append(out, ch.leaves(labels, e)...)
		if !ch.Continue {
			return out
		}
	}
	if len(out) == 0 {
		leaf := eff
		leaf.Routes = nil
		out = append(out, &leaf)
	}
	return out
}

var (
	receiverKeys = []string{"name", KindWebhook, KindAlertmanager, KindCommand, "send_resolved"}
	httpKeys     = []string{"url", "headers", "timeout"}
	amKeys       = []string{"url", "headers", "timeout", "alert_ttl"}
	commandKeys  = []string{"argv", "timeout"}
	routeKeys    = []string{"receiver", "group_by", "repeat_interval", "match", "match_re", "continue", "routes"}
	envRefRe     = regexp.MustCompile(`\$\{([^}]*)\}`)
	envNameRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// notifications checks the receivers and route sections.
func (c *checker) notifications(recv, route *entry) ([]*Receiver, *Route) {
	var receivers []*Receiver
	names := map[string]bool{}
	if recv != nil {
		receivers = c.receivers(*recv, names)
	}
	var refs []entry // route receivers, checked against names at the end
	var root *Route
	switch {
	case route != nil:
		budget := maxRoutes
		root = c.route(route.Value, route.Raw, "route", &refs, 0, &budget)
		if root != nil && root.Receiver == "" {
			c.add(route.KeyNode, "", "route.receiver", "the top-level route needs a receiver")
		}
		if root != nil && root.GroupBy == nil {
			root.GroupBy = []string{"alertname"}
		}
	case len(receivers) == 1:
		root = &Route{Receiver: receivers[0].Name, GroupBy: []string{"alertname"}}
	case len(receivers) > 1:
		c.add(recv.KeyNode, "", "route", "with more than one receiver, a route must say which gets each alert")
	}
	for _, ref := range refs {
		if name, _ := yamlast.Scalar(ref.Value); !names[name] {
			c.add(ref.Raw, "", ref.Key, "unknown receiver %q%s", name, yamlast.Suggest(name, slices.Sorted(maps.Keys(names))))
		}
	}
	return receivers, root
}

func (c *checker) receivers(e entry, names map[string]bool) []*Receiver {
	if _, ok := e.Value.(*ast.NullNode); ok || e.Value == nil {
		return nil
	}
	seq, ok := e.Value.(*ast.SequenceNode)
	if !ok {
		c.add(e.Raw, "", "receivers", "must be a list of receivers")
		return nil
	}
	var out []*Receiver
	for i, item := range seq.Values {
		field := fmt.Sprintf("receivers[%d]", i)
		entries, ok := c.mapping(item, "", field, "a receiver is a mapping with a name and one of webhook, alertmanager or command")
		if !ok {
			continue
		}
		r := &Receiver{SendResolved: true}
		// The name first, so that every other problem can say whose it is.
		hasName := false
		for _, kv := range entries {
			if kv.Key != "name" {
				continue
			}
			hasName = true
			name, ok := yamlast.Scalar(kv.Value)
			switch {
			case !ok || strings.TrimSpace(name) == "":
				c.add(kv.Raw, "", field+".name", "must be a non-empty string")
			case names[name]:
				c.add(kv.Raw, "", field+".name", "duplicate receiver name %q", name)
			default:
				r.Name = name
				names[name] = true
			}
		}
		if !hasName {
			c.add(item, "", field, "name is required")
		}
		if r.Name != "" {
			field = fmt.Sprintf("receivers[%s]", r.Name)
		}
		var kinds []entry
		for _, kv := range entries {
			switch kv.Key {
			case "name":
			case "send_resolved":
				b, ok := kv.Value.(*ast.BoolNode)
				if !ok {
					c.add(kv.Raw, "", field+".send_resolved", "must be true or false")
				} else {
					r.SendResolved = b.Value
				}
			case KindWebhook, KindAlertmanager, KindCommand:
				kinds = append(kinds, kv)
			default:
				c.add(kv.KeyNode, "", field+"."+kv.Key, "unknown field%s (fields: %s)", yamlast.Suggest(kv.Key, receiverKeys), strings.Join(receiverKeys, ", "))
			}
		}
		switch len(kinds) {
		case 0:
			c.add(item, "", field, "needs one of webhook, alertmanager or command")
		case 1:
			c.receiverKind(r, field, kinds[0])
		default:
			c.add(kinds[1].KeyNode, "", field+"."+kinds[1].Key, "a receiver has only one of webhook, alertmanager or command; this one also has %s", kinds[0].Key)
		}
		out = append(out, r)
	}
	return out
}

func (c *checker) receiverKind(r *Receiver, field string, e entry) {
	r.Kind = e.Key
	field += "." + e.Key
	keys := httpKeys
	switch e.Key {
	case KindAlertmanager:
		keys = amKeys
		r.AlertTTL = DefaultAlertTTL
		r.Timeout = DefaultHTTPTimeout
	case KindCommand:
		keys = commandKeys
		r.Timeout = DefaultCommandTimeout
	default:
		r.Timeout = DefaultHTTPTimeout
	}
	entries, ok := c.mapping(e.Raw, "", field, "must be a mapping of "+strings.Join(keys, ", "))
	if !ok {
		return
	}
	have := map[string]bool{}
	for _, kv := range entries {
		have[kv.Key] = true
		f := field + "." + kv.Key
		if !slices.Contains(keys, kv.Key) {
			c.add(kv.KeyNode, "", f, "unknown field%s (fields: %s)", yamlast.Suggest(kv.Key, keys), strings.Join(keys, ", "))
			continue
		}
		c.receiverField(r, f, kv)
	}
	switch {
	case r.Kind == KindCommand && !have["argv"]:
		c.add(e.KeyNode, "", field, "argv is required")
	case r.Kind != KindCommand && !have["url"]:
		c.add(e.KeyNode, "", field, "url is required")
	}
}

// receiverField checks one of a receiver's fields (f names it) and sets
// it.
func (c *checker) receiverField(r *Receiver, f string, kv entry) {
	switch kv.Key {
	case "url":
		s, ok := yamlast.Scalar(kv.Value)
		if !ok || !isString(kv.Value) {
			c.add(kv.Raw, "", f, "must be a URL string")
			return
		}
		if msg := checkURL(s); msg != "" {
			c.add(kv.Raw, "", f, "%s", msg)
			return
		}
		r.URL = s
	case "headers":
		r.Headers = c.stringMap("", f, kv)
		for _, he := range entriesQuiet(c, kv.Value) {
			if !headerNameRe.MatchString(he.Key) {
				c.add(he.KeyNode, "", f+"."+he.Key, "is not a valid HTTP header name")
			}
			if v, ok := r.Headers[he.Key]; ok {
				if msg := checkEnvRefs(v); msg != "" {
					c.add(he.Raw, "", f+"."+he.Key, "%s", msg)
				}
			}
		}
	case "timeout", "alert_ttl":
		s, ok := yamlast.Scalar(kv.Value)
		d, err := parseDuration(s)
		switch {
		case !ok:
			c.add(kv.Raw, "", f, "must be a duration, such as 10s")
		case err != nil:
			c.add(kv.Raw, "", f, "%v", err)
		case d <= 0:
			c.add(kv.Raw, "", f, "must be longer than 0")
		case kv.Key == "timeout":
			r.Timeout = d
		default:
			r.AlertTTL = d
		}
	case "argv":
		r.Argv = c.argv(f, kv)
	}
}

// argv checks a command receiver's argv: the program, then its
// arguments. It returns the strings that are valid.
func (c *checker) argv(f string, kv entry) []string {
	seq, ok := kv.Value.(*ast.SequenceNode)
	if !ok || len(seq.Values) == 0 {
		c.add(kv.Raw, "", f, "must be a non-empty list: the program, then its arguments")
		return nil
	}
	var argv []string
	for i, item := range seq.Values {
		at := fmt.Sprintf("%s[%d]", f, i)
		s, ok := yamlast.Scalar(c.resolve(item))
		switch {
		case !ok:
			c.add(item, "", at, "must be a string")
		case i == 0 && strings.TrimSpace(s) == "":
			c.add(item, "", at, "must name the program to run")
		default:
			if msg := checkEnvRefs(s); msg != "" {
				c.add(item, "", at, "%s", msg)
				continue
			}
			argv = append(argv, s)
		}
	}
	return argv
}

// checkURL checks an http(s) URL, with any ${NAME} standing for a value.
func checkURL(s string) string {
	if msg := checkEnvRefs(s); msg != "" {
		return msg
	}
	if strings.HasPrefix(s, "${") {
		return "" // the whole address is a secret; it is checked when sent
	}
	u, err := url.Parse(envRefRe.ReplaceAllString(s, "x"))
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http:// or https:// URL"
	case u.Host == "":
		return "has no host"
	}
	return ""
}

func checkEnvRefs(s string) string {
	for _, m := range envRefRe.FindAllStringSubmatch(s, -1) {
		if !envNameRe.MatchString(m[1]) {
			return fmt.Sprintf("${%s} is not an environment variable name", m[1])
		}
	}
	return ""
}

// ExpandEnv replaces each ${NAME} in s with the variable's value from
// lookup, returning the values it used so callers can keep them out of
// output. An unset variable is an error: sending a request with an empty
// token would fail anyway, and less clearly.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var used []string
	var missing string
	out := envRefRe.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := lookup(name)
		if !ok {
			if missing == "" {
				missing = name
			}
			return ""
		}
		if v != "" {
			used = append(used, v)
		}
		return v
	})
	if missing != "" {
		return "", nil, fmt.Errorf("environment variable %s is not set", missing)
	}
	return out, used, nil
}

// maxRoutes bounds a route tree, which aliases could otherwise make
// exponentially large: route: &a {routes: [*a, *a, *a]}.
const maxRoutes = 1000

func (c *checker) route(n, raw ast.Node, field string, refs *[]entry, depth int, budget *int) *Route {
	if *budget <= 0 {
		if *budget == 0 {
			c.add(raw, "", field, "more than %d routes", maxRoutes)
			*budget--
		}
		return nil
	}
	*budget--
	if depth > 16 {
		c.add(raw, "", field, "routes nest too deep")
		*budget = -1 // once: an alias loop would say it at every leaf
		return nil
	}
	entries, ok := c.mapping(raw, "", field, "a route is a mapping of "+strings.Join(routeKeys, ", "))
	if !ok {
		return nil
	}
	r := &Route{}
	var matchKey *entry // the first match or match_re, for the top-level route
	for _, kv := range entries {
		f := field + "." + kv.Key
		if (kv.Key == "match" || kv.Key == "match_re") && matchKey == nil {
			matchKey = &kv
		}
		if kv.Key == "routes" {
			seq, ok := kv.Value.(*ast.SequenceNode)
			if !ok {
				c.add(kv.Raw, "", f, "must be a list of routes")
				continue
			}
			for i, item := range seq.Values {
				if ch := c.route(c.resolve(item), item, fmt.Sprintf("%s[%d]", f, i), refs, depth+1, budget); ch != nil {
					r.Routes = append(r.Routes, ch)
				}
			}
			continue
		}
		c.routeField(r, f, kv, refs)
	}
	if depth == 0 && (len(r.Match) > 0 || len(r.MatchRE) > 0) {
		c.add(matchKey.KeyNode, "", field+"."+matchKey.Key, "the top-level route takes every alert; put %s in its routes", matchKey.Key)
	}
	return r
}

// routeField checks one of a route's fields other than its routes (f
// names it) and sets it. A receiver's name goes to refs, to be checked
// once every receiver is known.
func (c *checker) routeField(r *Route, f string, kv entry, refs *[]entry) {
	switch kv.Key {
	case "receiver":
		s, ok := yamlast.Scalar(kv.Value)
		if !ok || s == "" {
			c.add(kv.Raw, "", f, "must be a receiver's name")
			return
		}
		r.Receiver = s
		kv.Key = f
		*refs = append(*refs, kv)
	case "group_by":
		seq, ok := kv.Value.(*ast.SequenceNode)
		if !ok {
			c.add(kv.Raw, "", f, "must be a list of labels, such as [alertname, provider]")
			return
		}
		r.GroupBy = []string{}
		for _, item := range seq.Values {
			l, ok := yamlast.Scalar(c.resolve(item))
			if !ok || (l != "..." && !labelNameRe.MatchString(l)) {
				c.add(item, "", f, "a label is a name of letters, digits and underscores, or ... for all labels")
				continue
			}
			r.GroupBy = append(r.GroupBy, l)
		}
	case "repeat_interval":
		s, ok := yamlast.Scalar(kv.Value)
		d, err := parseDuration(s)
		switch {
		case !ok:
			c.add(kv.Raw, "", f, "must be a duration, such as 4h")
		case err != nil:
			c.add(kv.Raw, "", f, "%v", err)
		default:
			r.RepeatInterval = d
		}
	case "match":
		r.Match = c.stringMap("", f, kv)
	case "match_re":
		r.MatchRE = c.matchRE(f, kv)
	case "continue":
		b, ok := kv.Value.(*ast.BoolNode)
		if !ok {
			c.add(kv.Raw, "", f, "must be true or false")
			return
		}
		r.Continue = b.Value
	default:
		c.add(kv.KeyNode, "", f, "unknown field%s (fields: %s)", yamlast.Suggest(kv.Key, routeKeys), strings.Join(routeKeys, ", "))
	}
}

// matchRE checks a route's match_re, label names to regular expressions
// that must match the whole value, and compiles the valid ones.
func (c *checker) matchRE(f string, kv entry) map[string]*regexp.Regexp {
	m := c.stringMap("", f, kv)
	out := map[string]*regexp.Regexp{}
	for _, me := range entriesQuiet(c, kv.Value) {
		v, ok := m[me.Key]
		if !ok {
			continue
		}
		// Compiled as written first, so that an error shows the user's
		// expression rather than the anchored one.
		_, err := regexp.Compile(v)
		var re *regexp.Regexp
		if err == nil {
			re, err = regexp.Compile("^(?:" + v + ")$")
		}
		if err != nil {
			c.add(me.Raw, "", f+"."+me.Key, "%v", err)
			continue
		}
		out[me.Key] = re
	}
	return out
}
