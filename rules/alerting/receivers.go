package alerting

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

// receiverNode, kindNode and routeNode are the receivers and routes as
// written, each key's entry by field (yamlast.Fields); a key is a field
// and its check.
type receiverNode struct {
	Name         *entry `yaml:"name"`
	Webhook      *entry `yaml:"webhook"`
	Alertmanager *entry `yaml:"alertmanager"`
	Command      *entry `yaml:"command"`
	SendResolved *entry `yaml:"send_resolved"`
}

// kindNode holds the keys of every kind; those another kind's alone are
// unknown to a receiver (kindKeys).
type kindNode struct {
	URL      *entry `yaml:"url"`
	Headers  *entry `yaml:"headers"`
	Timeout  *entry `yaml:"timeout"`
	AlertTTL *entry `yaml:"alert_ttl"`
	Argv     *entry `yaml:"argv"`
}

type routeNode struct {
	Receiver       *entry `yaml:"receiver"`
	GroupBy        *entry `yaml:"group_by"`
	RepeatInterval *entry `yaml:"repeat_interval"`
	Match          *entry `yaml:"match"`
	MatchRE        *entry `yaml:"match_re"`
	Continue       *entry `yaml:"continue"`
	Routes         *entry `yaml:"routes"`
}

var (
	receiverKeys = yamlast.Keys(&receiverNode{})
	kindKeys     = map[string][]string{
		KindWebhook:      {"url", "headers", "timeout"},
		KindAlertmanager: {"url", "headers", "timeout", "alert_ttl"},
		KindCommand:      {"argv", "timeout"},
	}
	routeKeys    = yamlast.Keys(&routeNode{})
	envRefRe     = regexp.MustCompile(`\$\{([^}]*)\}`)
	envNameRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// byIndex orders entries as their mapping does.
func byIndex(a, b entry) int { return a.Index - b.Index }

// setIn is the entries of es that are set, in their mapping's order.
func setIn(es ...*entry) []entry {
	var out []entry
	for _, e := range es {
		if e != nil {
			out = append(out, *e)
		}
	}
	slices.SortFunc(out, byIndex)
	return out
}

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
		var n receiverNode
		unknown, ok := c.fields(item, "", field, "a receiver is a mapping with a name and one of webhook, alertmanager or command", &n)
		if !ok {
			continue
		}
		r := &Receiver{SendResolved: true}
		// The name first, so that every other problem can say whose it is.
		if kv := n.Name; kv == nil {
			c.add(item, "", field, "name is required")
		} else if name, ok := yamlast.Scalar(kv.Value); !ok || strings.TrimSpace(name) == "" {
			c.add(kv.Raw, "", field+".name", "must be a non-empty string")
		} else if names[name] {
			c.add(kv.Raw, "", field+".name", "duplicate receiver name %q", name)
		} else {
			r.Name = name
			names[name] = true
		}
		if r.Name != "" {
			field = fmt.Sprintf("receivers[%s]", r.Name)
		}
		var o yamlast.InOrder
		o.Add(n.SendResolved, func(kv entry) { c.boolean(kv, field+".send_resolved", &r.SendResolved) })
		o.Each(unknown, c.unknownField(field, receiverKeys))
		o.Run()
		switch kinds := setIn(n.Webhook, n.Alertmanager, n.Command); len(kinds) {
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
	keys := kindKeys[e.Key]
	r.Timeout = DefaultHTTPTimeout
	switch e.Key {
	case KindAlertmanager:
		r.AlertTTL = DefaultAlertTTL
	case KindCommand:
		r.Timeout = DefaultCommandTimeout
	}
	var n kindNode
	unknown, ok := c.fields(e.Raw, "", field, "must be a mapping of "+strings.Join(keys, ", "), &n)
	if !ok {
		return
	}
	// The keys of other kinds are unknown to this one.
	for _, kv := range []**entry{&n.URL, &n.Headers, &n.Timeout, &n.AlertTTL, &n.Argv} {
		if *kv != nil && !slices.Contains(keys, (*kv).Key) {
			unknown, *kv = append(unknown, **kv), nil
		}
	}
	var o yamlast.InOrder
	o.Each(unknown, c.unknownField(field, keys))
	o.Add(n.URL, func(kv entry) {
		s, ok := yamlast.Scalar(kv.Value)
		if msg := checkURL(s); !ok || !yamlast.IsString(kv.Value) {
			c.add(kv.Raw, "", field+".url", "must be a URL string")
		} else if msg != "" {
			c.add(kv.Raw, "", field+".url", "%s", msg)
		} else {
			r.URL = s
		}
	})
	o.Add(n.Headers, func(kv entry) { c.headers(r, field+".headers", kv) })
	o.Add(n.Timeout, c.duration("", field+".timeout", "10s", true, &r.Timeout))
	o.Add(n.AlertTTL, c.duration("", field+".alert_ttl", "10s", true, &r.AlertTTL))
	o.Add(n.Argv, func(kv entry) { r.Argv = c.argv(field+".argv", kv) })
	o.Run()
	switch {
	case r.Kind == KindCommand && n.Argv == nil:
		c.add(e.KeyNode, "", field, "argv is required")
	case r.Kind != KindCommand && n.URL == nil:
		c.add(e.KeyNode, "", field, "url is required")
	}
}

// headers checks a receiver's headers (f names them) and sets them.
func (c *checker) headers(r *Receiver, f string, kv entry) {
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
	var rn routeNode
	unknown, ok := c.fields(raw, "", field, "a route is a mapping of "+strings.Join(routeKeys, ", "), &rn)
	if !ok {
		return nil
	}
	r := &Route{}
	var o yamlast.InOrder
	o.Each(unknown, c.unknownField(field, routeKeys))
	c.routeFields(&o, r, field, &rn, refs)
	o.Add(rn.Routes, func(kv entry) {
		f := field + ".routes"
		seq, ok := kv.Value.(*ast.SequenceNode)
		if !ok {
			c.add(kv.Raw, "", f, "must be a list of routes")
			return
		}
		for i, item := range seq.Values {
			if ch := c.route(c.resolve(item), item, fmt.Sprintf("%s[%d]", f, i), refs, depth+1, budget); ch != nil {
				r.Routes = append(r.Routes, ch)
			}
		}
	})
	o.Run()
	if depth == 0 && (len(r.Match) > 0 || len(r.MatchRE) > 0) {
		// The first of match and match_re the route has.
		m := setIn(rn.Match, rn.MatchRE)[0]
		c.add(m.KeyNode, "", field+"."+m.Key, "the top-level route takes every alert; put %s in its routes", m.Key)
	}
	return r
}

// routeFields holds in o the checks of a route's fields other than its
// routes (field names the route), which set them. A receiver's name goes
// to refs, to be checked once every receiver is known.
func (c *checker) routeFields(o *yamlast.InOrder, r *Route, field string, n *routeNode, refs *[]entry) {
	o.Add(n.Receiver, func(kv entry) {
		if s, ok := yamlast.Scalar(kv.Value); !ok || s == "" {
			c.add(kv.Raw, "", field+".receiver", "must be a receiver's name")
		} else {
			r.Receiver = s
			kv.Key = field + ".receiver"
			*refs = append(*refs, kv)
		}
	})
	o.Add(n.GroupBy, func(kv entry) {
		f := field + ".group_by"
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
	})
	o.Add(n.RepeatInterval, c.duration("", field+".repeat_interval", "4h", false, &r.RepeatInterval))
	o.Add(n.Match, func(kv entry) { r.Match = c.stringMap("", field+".match", kv) })
	o.Add(n.MatchRE, func(kv entry) { r.MatchRE = c.matchRE(field+".match_re", kv) })
	o.Add(n.Continue, func(kv entry) { c.boolean(kv, field+".continue", &r.Continue) })
}

// unknownField reports a key of a receiver or route (field names it)
// that is none of keys.
func (c *checker) unknownField(field string, keys []string) func(entry) {
	return func(kv entry) {
		c.add(kv.KeyNode, "", field+"."+kv.Key, "unknown field%s (fields: %s)", yamlast.Suggest(kv.Key, keys), strings.Join(keys, ", "))
	}
}

// boolean checks that kv is true or false and sets dst to it.
func (c *checker) boolean(kv entry, field string, dst *bool) {
	if b, ok := kv.Value.(*ast.BoolNode); ok {
		*dst = b.Value
	} else {
		c.add(kv.Raw, "", field, "must be true or false")
	}
}

// duration checks a duration, such as example, and sets dst to it;
// positive says it must be above zero.
func (c *checker) duration(rn, field, example string, positive bool, dst *time.Duration) func(entry) {
	return func(e entry) {
		s, ok := yamlast.Scalar(e.Value)
		d, err := parseDuration(s)
		switch {
		case !ok:
			c.add(e.Raw, rn, field, "must be a duration, such as %s", example)
		case err != nil:
			c.add(e.Raw, rn, field, "%v", err)
		case positive && d <= 0:
			c.add(e.Raw, rn, field, "must be longer than 0")
		default:
			*dst = d
		}
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
