package alerting

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// routeView is a Route with its regular expressions as text, so that
// routes compare with reflect.DeepEqual. Empty matcher maps read as nil.
type routeView struct {
	Receiver       string
	GroupBy        []string
	RepeatInterval time.Duration
	Match          map[string]string
	MatchRE        map[string]string
	Continue       bool
	Routes         []routeView
}

func viewRoute(r *Route) *routeView {
	if r == nil {
		return nil
	}
	v := &routeView{Receiver: r.Receiver, GroupBy: r.GroupBy, RepeatInterval: r.RepeatInterval, Continue: r.Continue}
	if len(r.Match) > 0 {
		v.Match = r.Match
	}
	if len(r.MatchRE) > 0 {
		v.MatchRE = map[string]string{}
		for k, re := range r.MatchRE {
			v.MatchRE[k] = re.String()
		}
	}
	for _, ch := range r.Routes {
		v.Routes = append(v.Routes, *viewRoute(ch))
	}
	return v
}

func show(v any) string {
	switch v := v.(type) {
	case []*Receiver:
		var b strings.Builder
		for _, r := range v {
			fmt.Fprintf(&b, "\n  %+v", *r)
		}
		return b.String()
	}
	return fmt.Sprintf("%+v", v)
}

func TestReceiversParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml    string
		wantReceivers []*Receiver
		wantRoute     *routeView
	}{
		{"full", `receivers:
  - name: ops
    webhook:
      url: https://hooks.example.com/${HOOK_PATH}
      headers:
        Authorization: Bearer ${OPS_TOKEN}
        X-Team: platform
      timeout: 5s
  - name: am
    alertmanager:
      url: http://alertmanager:9093
      alert_ttl: 2h
  - name: page
    send_resolved: false
    command:
      argv: [notify-send, "orchstat: ${HOST}"]
      timeout: 1m
route:
  receiver: ops
  group_by: [alertname, provider]
  repeat_interval: 4h
  routes:
    - match: {severity: critical}
      receiver: page
      continue: true
      routes:
        - match_re: {provider: "open.*"}
          receiver: am
          group_by: ['...']
    - match_re: {provider: "anthropic|local"}
      repeat_interval: 1d
rules:
  - name: r
    metric: runs
    condition: value > 1
`, []*Receiver{
			{Name: "ops", Kind: KindWebhook, URL: "https://hooks.example.com/${HOOK_PATH}",
				Headers: map[string]string{"Authorization": "Bearer ${OPS_TOKEN}", "X-Team": "platform"},
				Timeout: 5 * time.Second, SendResolved: true},
			{Name: "am", Kind: KindAlertmanager, URL: "http://alertmanager:9093", Timeout: DefaultHTTPTimeout,
				SendResolved: true, AlertTTL: 2 * time.Hour},
			{Name: "page", Kind: KindCommand, Argv: []string{"notify-send", "orchstat: ${HOST}"}, Timeout: time.Minute},
		}, &routeView{Receiver: "ops", GroupBy: []string{"alertname", "provider"}, RepeatInterval: 4 * time.Hour, Routes: []routeView{
			{Receiver: "page", Match: map[string]string{"severity": "critical"}, Continue: true, Routes: []routeView{
				{Receiver: "am", GroupBy: []string{"..."}, MatchRE: map[string]string{"provider": "^(?:open.*)$"}},
			}},
			{MatchRE: map[string]string{"provider": "^(?:anthropic|local)$"}, RepeatInterval: 24 * time.Hour},
		}}},
		{"defaults", `receivers:
  - name: hook
    webhook: {url: "http://example.com/hook"}
  - name: am
    alertmanager: {url: "https://am.example.com"}
  - name: run
    command: {argv: [./notify.sh]}
route:
  receiver: hook
`, []*Receiver{
			{Name: "hook", Kind: KindWebhook, URL: "http://example.com/hook", Timeout: 10 * time.Second, SendResolved: true},
			{Name: "am", Kind: KindAlertmanager, URL: "https://am.example.com", Timeout: 10 * time.Second, SendResolved: true, AlertTTL: time.Hour},
			{Name: "run", Kind: KindCommand, Argv: []string{"./notify.sh"}, Timeout: 30 * time.Second, SendResolved: true},
		}, &routeView{Receiver: "hook", GroupBy: []string{"alertname"}}},
		{"one receiver, no route", "receivers: [{name: only, webhook: {url: \"http://example.com\"}}]\n",
			[]*Receiver{{Name: "only", Kind: KindWebhook, URL: "http://example.com", Timeout: 10 * time.Second, SendResolved: true}},
			&routeView{Receiver: "only", GroupBy: []string{"alertname"}}},
		{"empty group_by stays empty", "receivers: [{name: only, command: {argv: [x]}}]\nroute: {receiver: only, group_by: []}\n",
			[]*Receiver{{Name: "only", Kind: KindCommand, Argv: []string{"x"}, Timeout: 30 * time.Second, SendResolved: true}},
			&routeView{Receiver: "only", GroupBy: []string{}}},
		{"... unquoted in group_by", "receivers: [{name: only, command: {argv: [x]}}]\nroute:\n  receiver: only\n  group_by: [...]\n",
			[]*Receiver{{Name: "only", Kind: KindCommand, Argv: []string{"x"}, Timeout: 30 * time.Second, SendResolved: true}},
			&routeView{Receiver: "only", GroupBy: []string{"..."}}},
		{"... in a block list", "receivers: [{name: only, command: {argv: [x]}}]\nroute:\n  receiver: only\n  group_by:\n    - ...\n",
			[]*Receiver{{Name: "only", Kind: KindCommand, Argv: []string{"x"}, Timeout: 30 * time.Second, SendResolved: true}},
			&routeView{Receiver: "only", GroupBy: []string{"..."}}},
		{"no receivers", "rules: []\n", nil, nil},
		{"empty receivers", "receivers: []\n", nil, nil},
		{"null receivers", "receivers:\nrules: []\n", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("x.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.Receivers, tc.wantReceivers) {
				t.Errorf("receivers:%s\nwant:%s", show(f.Receivers), show(tc.wantReceivers))
			}
			if got := viewRoute(f.Route); !reflect.DeepEqual(got, tc.wantRoute) {
				t.Errorf("route:\n  %s\nwant:\n  %s", show(got), show(tc.wantRoute))
			}
		})
	}
}

func TestReceiverProblems(t *testing.T) {
	t.Parallel()
	// Most cases start with one good receiver, ops, on lines 1-3.
	const ops = "receivers:\n  - name: ops\n    webhook: {url: \"https://hooks.example.com\"}\n"
	deepField := "route" + strings.Repeat(".routes[0]", 17)
	wide := ops + "route:\n  receiver: ops\n  routes:\n" + strings.Repeat("    - {}\n", 1001)
	for _, tc := range []struct {
		name, yaml string
		want       []string // every problem, exactly
	}{
		{"unknown receiver, close", ops + "route:\n  receiver: opz\n",
			[]string{`x.yaml:5:13: route.receiver: unknown receiver "opz"; did you mean "ops"?`}},
		{"unknown receiver, not close", ops + "route:\n  receiver: slack\n",
			[]string{`x.yaml:5:13: route.receiver: unknown receiver "slack"`}},
		{"unknown receiver in a nested route", ops + `  - name: pager
    command: {argv: [page]}
route:
  receiver: ops
  routes:
    - match: {severity: critical}
      routes:
        - receiver: pagr
`, []string{`x.yaml:11:21: route.routes[0].routes[0].receiver: unknown receiver "pagr"; did you mean "pager"?`}},
		{"two kinds", ops + "    command: {argv: [notify]}\n",
			[]string{`x.yaml:4:5: receivers[ops].command: a receiver has only one of webhook, alertmanager or command; this one also has webhook`}},
		{"no kind", "receivers:\n  - name: ops\n    send_resolved: false\n",
			[]string{`x.yaml:2:5: receivers[ops]: needs one of webhook, alertmanager or command`}},
		{"missing url", "receivers:\n  - name: ops\n    alertmanager:\n      alert_ttl: 2h\n",
			[]string{`x.yaml:3:5: receivers[ops].alertmanager: url is required`}},
		{"missing argv", "receivers:\n  - name: run\n    command: {timeout: 5s}\n",
			[]string{`x.yaml:3:5: receivers[run].command: argv is required`}},
		{"empty argv", "receivers:\n  - name: run\n    command:\n      argv: []\n",
			[]string{`x.yaml:4:13: receivers[run].command.argv: must be a non-empty list: the program, then its arguments`}},
		{"empty program", "receivers:\n  - name: run\n    command:\n      argv: [\"\", x]\n",
			[]string{`x.yaml:4:14: receivers[run].command.argv[0]: must name the program to run`}},
		{"kind not a mapping", "receivers:\n  - name: ops\n    webhook: https://hooks.example.com\n",
			[]string{`x.yaml:3:14: receivers[ops].webhook: must be a mapping of url, headers, timeout`}},
		{"ftp url", "receivers:\n  - name: ops\n    webhook:\n      url: ftp://files.example.com/x\n",
			[]string{`x.yaml:4:12: receivers[ops].webhook.url: must be an http:// or https:// URL`}},
		{"url without host", "receivers:\n  - name: ops\n    webhook:\n      url: \"http:///hook\"\n",
			[]string{`x.yaml:4:12: receivers[ops].webhook.url: has no host`}},
		{"url not a string", "receivers:\n  - name: ops\n    webhook:\n      url: 42\n",
			[]string{`x.yaml:4:12: receivers[ops].webhook.url: must be a URL string`}},
		{"bad env name in url", "receivers:\n  - name: ops\n    webhook:\n      url: https://example.com/${1BAD}\n",
			[]string{`x.yaml:4:12: receivers[ops].webhook.url: ${1BAD} is not an environment variable name`}},
		{"bad env name in a header", `receivers:
  - name: ops
    webhook:
      url: https://example.com
      headers:
        Authorization: Bearer ${1BAD}
`, []string{`x.yaml:6:24: receivers[ops].webhook.headers.Authorization: ${1BAD} is not an environment variable name`}},
		{"bad env name in argv", "receivers:\n  - name: run\n    command:\n      argv: [notify, \"${1BAD}\"]\n",
			[]string{`x.yaml:4:22: receivers[run].command.argv[1]: ${1BAD} is not an environment variable name`}},
		{"bad header name", "receivers:\n  - name: ops\n    webhook:\n      url: https://example.com\n      headers: {\"X Token\": abc}\n",
			[]string{`x.yaml:5:17: receivers[ops].webhook.headers.X Token: is not a valid HTTP header name`}},
		{"bad timeout", "receivers:\n  - name: ops\n    webhook:\n      url: https://example.com\n      timeout: soon\n",
			[]string{`x.yaml:5:16: receivers[ops].webhook.timeout: "soon" is not a duration (use Go durations like 90s, 10m, 1h30m, or days like 7d)`}},
		{"zero timeout", "receivers:\n  - name: run\n    command:\n      argv: [x]\n      timeout: 0s\n",
			[]string{`x.yaml:5:16: receivers[run].command.timeout: must be longer than 0`}},
		{"zero alert_ttl", "receivers:\n  - name: am\n    alertmanager:\n      url: http://am:9093\n      alert_ttl: 0\n",
			[]string{`x.yaml:5:18: receivers[am].alertmanager.alert_ttl: must be longer than 0`}},
		{"send_resolved not a bool", "receivers:\n  - name: ops\n    send_resolved: \"no\"\n    command: {argv: [x]}\n",
			[]string{`x.yaml:3:20: receivers[ops].send_resolved: must be true or false`}},
		{"duplicate receiver name", ops + "  - name: ops\n    command: {argv: [notify]}\nroute:\n  receiver: ops\n",
			[]string{`x.yaml:4:11: receivers[1].name: duplicate receiver name "ops"`}},
		{"missing name", "receivers:\n  - webhook: {url: \"https://a.example.com\"}\n",
			[]string{`x.yaml:2:5: receivers[0]: name is required`}},
		{"empty name", "receivers:\n  - name: \"\"\n    webhook: {url: \"https://a.example.com\"}\n",
			[]string{`x.yaml:2:11: receivers[0].name: must be a non-empty string`}},
		{"receivers not a list", "receivers: {name: ops}\n",
			[]string{`x.yaml:1:12: receivers: must be a list of receivers`}},
		{"receiver not a mapping", "receivers:\n  - ops\n",
			[]string{`x.yaml:2:5: receivers[0]: a receiver is a mapping with a name and one of webhook, alertmanager or command`}},
		{"unknown receiver field, named before the name", "receivers:\n  - sendresolved: false\n    name: ops\n    webhook: {url: \"https://a.example.com\"}\n",
			[]string{`x.yaml:2:5: receivers[ops].sendresolved: unknown field; did you mean "send_resolved"? (fields: name, webhook, alertmanager, command, send_resolved)`}},
		{"unknown webhook field", "receivers:\n  - name: ops\n    webhook:\n      url: https://a.example.com\n      header: {X-Token: abc}\n",
			[]string{`x.yaml:5:7: receivers[ops].webhook.header: unknown field; did you mean "headers"? (fields: url, headers, timeout)`}},
		{"alert_ttl on a webhook", "receivers:\n  - name: ops\n    webhook:\n      url: https://a.example.com\n      alert_ttl: 1h\n",
			[]string{`x.yaml:5:7: receivers[ops].webhook.alert_ttl: unknown field (fields: url, headers, timeout)`}},
		{"unknown route field", ops + "route:\n  receiver: ops\n  group-by: [provider]\n",
			[]string{`x.yaml:6:3: route.group-by: unknown field; did you mean "group_by"? (fields: receiver, group_by, repeat_interval, match, match_re, continue, routes)`}},
		{"misspelt route receiver", ops + "route:\n  reciever: ops\n", []string{
			`x.yaml:4:1: route.receiver: the top-level route needs a receiver`,
			`x.yaml:5:3: route.reciever: unknown field; did you mean "receiver"? (fields: receiver, group_by, repeat_interval, match, match_re, continue, routes)`,
		}},
		{"route not a mapping", ops + "route: ops\n",
			[]string{`x.yaml:4:8: route: a route is a mapping of receiver, group_by, repeat_interval, match, match_re, continue, routes`}},
		{"bad match_re", ops + "route:\n  receiver: ops\n  routes:\n    - match_re: {provider: \"(open\"}\n",
			[]string{"x.yaml:7:28: route.routes[0].match_re.provider: error parsing regexp: missing closing ): `(open`"}},
		{"match on the top-level route", ops + "route:\n  receiver: ops\n  match: {severity: critical}\n",
			[]string{`x.yaml:6:3: route.match: the top-level route takes every alert; put match in its routes`}},
		{"match_re on the top-level route", ops + "route:\n  receiver: ops\n  continue: false\n  match_re: {provider: open.*}\n",
			[]string{`x.yaml:7:3: route.match_re: the top-level route takes every alert; put match_re in its routes`}},
		{"two receivers, no route", ops + "  - name: b\n    webhook: {url: \"https://b.example.com\"}\n",
			[]string{`x.yaml:1:1: route: with more than one receiver, a route must say which gets each alert`}},
		{"route without receivers", "route:\n  receiver: ops\n",
			[]string{`x.yaml:2:13: route.receiver: unknown receiver "ops"`}},
		{"continue not a bool", ops + "route:\n  receiver: ops\n  routes:\n    - match: {severity: critical}\n      continue: \"yes\"\n",
			[]string{`x.yaml:8:17: route.routes[0].continue: must be true or false`}},
		{"bad group_by label", ops + "route:\n  receiver: ops\n  group_by: [alertname, team-a]\n",
			[]string{`x.yaml:6:25: route.group_by: a label is a name of letters, digits and underscores, or ... for all labels`}},
		{"group_by not a list", ops + "route:\n  receiver: ops\n  group_by: provider\n",
			[]string{`x.yaml:6:13: route.group_by: must be a list of labels, such as [alertname, provider]`}},
		{"bad repeat_interval", ops + "route:\n  receiver: ops\n  repeat_interval: daily\n",
			[]string{`x.yaml:6:20: route.repeat_interval: "daily" is not a duration (use Go durations like 90s, 10m, 1h30m, or days like 7d)`}},
		{"route loop through an alias", ops + "route: &a {receiver: ops, routes: [*a, *a]}\n",
			[]string{`x.yaml:4:36: ` + deepField + `: routes nest too deep`}},
		{"too many routes", wide,
			[]string{`x.yaml:1006:7: route.routes[999]: more than 1000 routes`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Check("x.yaml", []byte(tc.yaml)) {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				if len(got) > 10 {
					got = append(got[:10], fmt.Sprintf("... %d in all", len(got)))
				}
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
				if len(tc.yaml) < 2000 {
					t.Logf("file:\n%s", tc.yaml)
				}
			}
			if _, err := Parse("x.yaml", []byte(tc.yaml)); err == nil {
				t.Error("Parse accepted the file")
			}
		})
	}
}

func TestRouteLeaves(t *testing.T) {
	t.Parallel()
	f, err := Parse("x.yaml", []byte(`receivers:
  - name: default
    webhook: {url: "https://a.example.com"}
  - name: pager
    command: {argv: [page]}
  - name: am
    alertmanager: {url: "https://am.example.com"}
  - name: chat
    webhook: {url: "https://chat.example.com"}
route:
  receiver: default
  group_by: [alertname, provider]
  repeat_interval: 4h
  routes:
    - match: {severity: critical}
      receiver: pager
      repeat_interval: 1h
      continue: true
      routes:
        - match: {team: infra}
          group_by: ['...']
    - match_re: {provider: "open.*"}
      receiver: am
    - match: {severity: critical}
      receiver: chat
    - match: {severity: warning, team: infra}
      match_re: {provider: "local|ollama"}
      receiver: chat
      group_by: [team]
    - match: {team: all}
      receiver: chat
      group_by: []
`))
	if err != nil {
		t.Fatal(err)
	}
	type leaf struct {
		Receiver string
		GroupBy  string
		Repeat   time.Duration
	}
	root := leaf{"default", "alertname,provider", 4 * time.Hour}
	pager := leaf{"pager", "alertname,provider", time.Hour}
	am := leaf{"am", "alertname,provider", 4 * time.Hour}
	chat := leaf{"chat", "alertname,provider", 4 * time.Hour}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []leaf
	}{
		{"no child matches", map[string]string{"alertname": "x", "severity": "info"}, []leaf{root}},
		{"no labels", nil, []leaf{root}},
		{"match_re child", map[string]string{"severity": "warning", "provider": "openai"}, []leaf{am}},
		{"match_re matches all of the value", map[string]string{"severity": "warning", "provider": "open"}, []leaf{am}},
		{"match_re is anchored at the start", map[string]string{"severity": "warning", "provider": "xopenai"}, []leaf{root}},
		{"continue lets a later sibling match", map[string]string{"severity": "critical", "provider": "anthropic"}, []leaf{pager, chat}},
		{"the first match without continue wins", map[string]string{"severity": "critical", "provider": "openai"}, []leaf{pager, am}},
		{"nested child inherits receiver and repeat_interval", map[string]string{"severity": "critical", "team": "infra", "provider": "anthropic"},
			[]leaf{{"pager", "...", time.Hour}, chat}},
		{"match and match_re both apply", map[string]string{"severity": "warning", "team": "infra", "provider": "ollama"},
			[]leaf{{"chat", "team", 4 * time.Hour}}},
		{"match alone is not enough", map[string]string{"severity": "warning", "team": "infra", "provider": "mistral"}, []leaf{root}},
		{"an explicit empty group_by is not inherited", map[string]string{"team": "all"}, []leaf{{"chat", "", 4 * time.Hour}}},
		{"an alternation is anchored as a whole", map[string]string{"severity": "warning", "team": "infra", "provider": "localhost"}, []leaf{root}},
		{"and at its end", map[string]string{"severity": "warning", "team": "infra", "provider": "my-ollama"}, []leaf{root}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []leaf
			for _, r := range f.Route.Leaves(tc.labels) {
				if r.Routes != nil {
					t.Errorf("leaf %s has child routes", r.Receiver)
				}
				got = append(got, leaf{r.Receiver, strings.Join(r.GroupBy, ","), r.RepeatInterval})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// Leaves fills in inherited settings on copies, not in the tree.
	if n := f.Route.Routes[0].Routes[0]; n.Receiver != "" || n.RepeatInterval != 0 {
		t.Errorf("Leaves changed the tree: nested route has receiver %q, repeat_interval %v", n.Receiver, n.RepeatInterval)
	}
	if got := (*Route)(nil).Leaves(map[string]string{"a": "b"}); got != nil {
		t.Errorf("a nil route has leaves %v", got)
	}
}

func TestExpandEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOKEN": "s3cret", "HOST": "example.com", "EMPTY": ""}
	lookup := func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
	for _, tc := range []struct {
		in, want string
		used     []string
		err      string
	}{
		{"Bearer ${TOKEN}", "Bearer s3cret", []string{"s3cret"}, ""},
		{"https://${HOST}/hook?t=${TOKEN}", "https://example.com/hook?t=s3cret", []string{"example.com", "s3cret"}, ""},
		{"a${EMPTY}b", "ab", nil, ""},
		{"no references", "no references", nil, ""},
		{"", "", nil, ""},
		{"$HOME and $TOKEN stay", "$HOME and $TOKEN stay", nil, ""},
		{"${MISSING}", "", nil, "environment variable MISSING is not set"},
		{"${TOKEN} ${UNSET} ${OTHER}", "", nil, "environment variable UNSET is not set"},
	} {
		got, used, err := ExpandEnv(tc.in, lookup)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if got != tc.want || !slices.Equal(used, tc.used) || errText != tc.err {
			t.Errorf("ExpandEnv(%q) = %q, %q, %q; want %q, %q, %q", tc.in, got, used, errText, tc.want, tc.used, tc.err)
		}
	}
}
