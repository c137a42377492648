//! `pods/exec` over WebSocket, as kube-apiserver + kubelet speak it to kubectl ≥ 1.30: a GET with
//! `Upgrade: websocket` and the `v5.channel.k8s.io` (else `v4.channel.k8s.io`) subprotocol, one
//! byte of channel before each binary message (0 stdin, 1 stdout, 2 stderr, 3 the closing
//! metav1.Status, 4 resize, 255 close of a stream in v5). Behind it a small built-in shell:
//! `echo`, `ls`, `cat`, `env`, `hostname`, `pwd`, `true`, `false`, `exit [N]`, and `sh`/`bash`
//! (interactive on stdin, or `-c SCRIPT`), over a tiny fake filesystem (`/workspace/README.md`,
//! `/etc/hostname`, `/etc/os-release`). Refusals are the API server's Status bodies, so the
//! client reports them rather than falling back to SPDY.

use super::SimState;
use super::logs::{container_status, pick_container};
use super::resources::PODS;
use super::status::{self, ApiError};
use super::wire::{Body, full};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper::Response;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const CLOSE: u8 = 255;

/// What the shell of one exec knows about its pod.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub command: Vec<String>,
    pub pod: String,
    pub namespace: String,
    pub container: String,
    pub env: BTreeMap<String, String>,
    pub stdin: bool,
    pub stderr: bool,
    pub tty: bool,
}

/// Whether a request path is a pod's exec subresource: `(namespace, pod)`.
pub(crate) fn exec_target(path: &str) -> Option<(String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api", "v1", "namespaces", ns, "pods", name, "exec"] => Some((ns.to_string(), name.to_string())),
        _ => None,
    }
}

/// The subprotocol answered: v5 if offered, else v4; `None` when neither is.
pub(crate) fn choose_protocol(offered: &str) -> Option<&'static str> {
    let offered: Vec<&str> = offered.split(',').map(str::trim).collect();
    ["v5.channel.k8s.io", "v4.channel.k8s.io"]
        .into_iter()
        .find(|p| offered.contains(p))
}

/// Check the pod and container as the API server and the kubelet do, and describe the session.
pub(crate) fn prepare(st: &SimState, ns: &str, name: &str, query: &[(String, String)]) -> Result<Session, ApiError> {
    let param = |k: &str| query.iter().find(|(q, _)| q == k).map(|(_, v)| v.as_str());
    let flag = |k: &str| matches!(param(k), Some("1" | "true" | "True" | "TRUE" | "t"));
    let pod = st
        .store
        .get(&PODS, ns, name)
        .ok_or_else(|| status::not_found(&PODS, name))?;
    let container = pick_container(pod, name, param("container"))?;
    let command: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.clone())
        .collect();
    if command.is_empty() {
        return Err(status::bad_request("you must specify at least 1 command"));
    }
    on_a_node(pod, name)?;
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if matches!(phase, "Succeeded" | "Failed") {
        return Err(status::bad_request("unable to upgrade connection: pod does not exist"));
    }
    let running = container_status(pod, &container).is_some_and(|c| c.pointer("/state/running").is_some());
    if !running {
        return Err(status::bad_request(&format!(
            "unable to upgrade connection: container not found (\"{container}\")"
        )));
    }
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
    );
    env.insert("HOSTNAME".to_string(), name.to_string());
    env.insert("HOME".to_string(), "/root".to_string());
    let spec = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["name"] == container.as_str()));
    for e in spec.and_then(|c| c["env"].as_array()).map(Vec::as_slice).unwrap_or(&[]) {
        if let (Some(k), Some(v)) = (e["name"].as_str(), e["value"].as_str()) {
            env.insert(k.to_string(), v.to_string());
        }
    }
    let tty = flag("tty");
    Ok(Session {
        command,
        pod: name.to_string(),
        namespace: ns.to_string(),
        container,
        env,
        stdin: flag("stdin"),
        // with a tty, stderr goes to stdout
        stderr: flag("stderr") && !tty,
        tty,
    })
}

/// How long the sim's runtime takes to start an exec'd command (a real one takes milliseconds to
/// tens of them): client-go makes its stdout and stderr streams in that time.
const EXEC_START: std::time::Duration = std::time::Duration::from_millis(25);

/// The 101 answer; the session runs once hyper hands over the connection.
pub(crate) fn upgrade(session: Session, key: &str, protocol: &'static str, on: OnUpgrade) -> Response<Body> {
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let v5 = protocol.starts_with("v5");
    tokio::spawn(async move {
        let Ok(upgraded) = on.await else {
            return;
        };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        // a container runtime takes a moment to start the command; without it, the first frames can
        // reach a client before it has made its streams, and client-go's WebSocket executor drops
        // a frame for a stream it does not know yet ("Unknown stream id 1, discarding message")
        tokio::time::sleep(EXEC_START).await;
        run(ws, session, v5).await;
    });
    Response::builder()
        .status(101)
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-accept", accept)
        .header("sec-websocket-protocol", protocol)
        .body(full(Bytes::new()))
        .expect("response")
}

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut out = Vec::with_capacity(data.len() + 1);
    out.push(channel);
    out.extend_from_slice(data);
    Message::Binary(out.into())
}

/// The metav1.Status the error channel carries at the end.
pub(crate) fn exit_status(command: &[String], code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({"metadata": {}, "status": "Failure",
        "message": format!("command terminated with non-zero exit code: error executing command [{}], exit code {code}", command.join(" ")),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
}

async fn run<S>(ws: WebSocketStream<S>, session: Session, v5: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut tx, mut rx) = ws.split();
    let mut shell = Shell::new(&session);
    let interactive = shell.interactive(&session.command);
    let code = if let Some(script) = interactive {
        match script {
            Some(script) => {
                let out = shell.run_script(&script);
                let _ = send(&mut tx, &session, &out).await;
                out.code
            }
            // a shell with no stdin reads its end at once
            None if !session.stdin => 0,
            None => {
                let mut buf: Vec<u8> = Vec::new();
                let mut code = 0;
                if session.tty {
                    let _ = tx.send(frame(STDOUT, b"$ ")).await;
                }
                let mut term = Terminal::default();
                'session: loop {
                    let (data, eof) = match rx.next().await {
                        Some(Ok(Message::Binary(b))) if b.first() == Some(&STDIN) => (b[1..].to_vec(), false),
                        Some(Ok(Message::Binary(b))) if v5 && b.first() == Some(&CLOSE) => {
                            (Vec::new(), b.get(1) == Some(&STDIN))
                        }
                        Some(Ok(Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Text(_))) => {
                            (Vec::new(), false)
                        }
                        _ => (Vec::new(), true),
                    };
                    let mut lines = Vec::new();
                    let mut ended = eof;
                    if session.tty {
                        // the terminal's line discipline: echo, erase, ^C, ^D
                        let (echo, inputs) = term.feed(&data);
                        if !echo.is_empty() && tx.send(frame(STDOUT, &echo)).await.is_err() {
                            break;
                        }
                        for input in inputs {
                            match input {
                                Input::Line(l) => lines.push(Some(l)),
                                Input::Interrupt => lines.push(None),
                                Input::Eof => ended = true,
                            }
                        }
                    } else {
                        buf.extend_from_slice(&data);
                        while let Some(at) = buf.iter().position(|b| *b == b'\n') {
                            let line: Vec<u8> = buf.drain(..=at).collect();
                            lines.push(Some(String::from_utf8_lossy(&line).into_owned()));
                        }
                        if eof && !buf.is_empty() {
                            lines.push(Some(String::from_utf8_lossy(&std::mem::take(&mut buf)).into_owned()));
                        }
                    }
                    for line in lines {
                        if let Some(line) = line {
                            let out = shell.run_script(&line);
                            code = out.code;
                            if send(&mut tx, &session, &out).await.is_err() || out.exited {
                                break 'session;
                            }
                        } else {
                            code = 130;
                        }
                        if session.tty {
                            let _ = tx.send(frame(STDOUT, b"$ ")).await;
                        }
                    }
                    if ended {
                        break;
                    }
                }
                code
            }
        }
    } else {
        let out = shell.run_argv(&session.command);
        let _ = send(&mut tx, &session, &out).await;
        out.code
    };
    let status = serde_json::to_vec(&exit_status(&session.command, code)).unwrap_or_default();
    let _ = tx.send(frame(ERROR, &status)).await;
    close_normally(&mut tx, &mut rx).await;
}

/// End a WebSocket session as the API server does: a normal close frame, then the client's
/// close answer let arrive (at most 5 s) before the connection goes. Exec's and port-forward's.
pub(crate) async fn close_normally<S, R>(tx: &mut S, rx: &mut R)
where
    S: futures::Sink<Message> + Unpin,
    R: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let normal = CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    };
    let _ = tx.send(Message::Close(Some(normal))).await;
    let wait = async {
        while let Some(Ok(m)) = rx.next().await {
            if m.is_close() {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), wait).await;
}

async fn send<T>(tx: &mut T, session: &Session, out: &Output) -> Result<(), ()>
where
    T: futures::Sink<Message> + Unpin,
{
    let fix = |s: &str| {
        if session.tty {
            s.replace('\n', "\r\n")
        } else {
            s.to_string()
        }
    };
    if !out.stdout.is_empty() {
        tx.send(frame(STDOUT, fix(&out.stdout).as_bytes()))
            .await
            .map_err(|_| ())?;
    }
    if !out.stderr.is_empty() {
        let channel = if session.stderr { STDERR } else { STDOUT };
        tx.send(frame(channel, fix(&out.stderr).as_bytes()))
            .await
            .map_err(|_| ())?;
    }
    Ok(())
}

/// What a terminal's line discipline makes of typed bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    Line(String),
    /// ^C: the line is dropped.
    Interrupt,
    /// ^D on an empty line.
    Eof,
}

/// A pty's cooked mode, as far as a shell prompt needs it: typed bytes are echoed, Enter ends a
/// line, Backspace erases, ^C drops the line, ^D on an empty line ends input, escape sequences
/// (arrow keys) are ignored.
#[derive(Debug, Default)]
pub(crate) struct Terminal {
    line: String,
    /// Inside an escape sequence: 1 after ESC, 2 after `ESC [`.
    escape: u8,
}

impl Terminal {
    /// The echo, and the inputs completed by these bytes.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> (Vec<u8>, Vec<Input>) {
        let (mut echo, mut inputs) = (Vec::new(), Vec::new());
        for ch in String::from_utf8_lossy(bytes).chars() {
            match (self.escape, ch) {
                (1, '[' | 'O') => self.escape = 2,
                (1, _) => self.escape = 0,
                (2, c) if c.is_ascii_alphabetic() || c == '~' => self.escape = 0,
                (2, _) => {}
                (_, '\u{1b}') => self.escape = 1,
                (_, '\r' | '\n') => {
                    echo.extend_from_slice(b"\r\n");
                    inputs.push(Input::Line(std::mem::take(&mut self.line)));
                }
                (_, '\u{7f}' | '\u{8}') => {
                    if self.line.pop().is_some() {
                        echo.extend_from_slice(b"\x08 \x08");
                    }
                }
                (_, '\u{3}') => {
                    echo.extend_from_slice(b"^C\r\n");
                    self.line.clear();
                    inputs.push(Input::Interrupt);
                }
                (_, '\u{4}') if self.line.is_empty() => inputs.push(Input::Eof),
                (_, c) if c.is_control() && c != '\t' => {}
                (_, c) => {
                    self.line.push(c);
                    let mut b = [0u8; 4];
                    echo.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                }
            }
        }
        (echo, inputs)
    }
}

/// What running something printed, and how it ended.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
    /// `exit` ran: the shell ends.
    pub exited: bool,
}

impl Output {
    fn add(&mut self, other: Output) {
        self.stdout.push_str(&other.stdout);
        self.stderr.push_str(&other.stderr);
        self.code = other.code;
        self.exited = other.exited;
    }
}

/// The built-in shell over the fake filesystem.
pub(crate) struct Shell {
    env: BTreeMap<String, String>,
    files: BTreeMap<String, String>,
    cwd: String,
}

impl Shell {
    pub(crate) fn new(session: &Session) -> Shell {
        let mut files = BTreeMap::new();
        files.insert("/etc/hostname".to_string(), format!("{}\n", session.pod));
        files.insert(
            "/etc/os-release".to_string(),
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n"
                .to_string(),
        );
        files.insert(
            "/workspace/README.md".to_string(),
            format!(
                "# {}\n\nA namzu workspace (simulated): container {} in namespace {}.\n",
                session.pod, session.container, session.namespace
            ),
        );
        files.insert(
            "/workspace/.namzu/session.json".to_string(),
            format!("{{\"sandbox\":\"{}\",\"status\":\"idle\"}}\n", session.pod),
        );
        Shell {
            env: session.env.clone(),
            files,
            cwd: "/workspace".to_string(),
        }
    }

    /// `Some(None)`: an interactive shell on stdin; `Some(Some(script))`: `sh -c script`;
    /// `None`: a plain command.
    pub(crate) fn interactive(&self, argv: &[String]) -> Option<Option<String>> {
        let first = argv.first()?;
        if !matches!(
            first.as_str(),
            "sh" | "bash" | "/bin/sh" | "/bin/bash" | "/usr/bin/bash"
        ) {
            return None;
        }
        match argv.get(1).map(String::as_str) {
            Some("-c") => Some(Some(argv.get(2).cloned().unwrap_or_default())),
            _ => Some(None),
        }
    }

    /// A script: commands separated by `;` or new lines; stops at `exit`.
    pub(crate) fn run_script(&mut self, script: &str) -> Output {
        let mut out = Output::default();
        for command in split_commands(script) {
            let words = words(&command);
            if words.is_empty() {
                continue;
            }
            out.add(self.run_argv(&words));
            if out.exited {
                break;
            }
        }
        out
    }

    fn resolve(&self, path: &str) -> String {
        let joined = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("{}/{path}", self.cwd)
        };
        let mut parts: Vec<&str> = Vec::new();
        for p in joined.split('/') {
            match p {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        format!("/{}", parts.join("/"))
    }

    /// The entries directly under a directory, or `None` when it is not one.
    fn list_dir(&self, dir: &str) -> Option<Vec<String>> {
        let prefix = if dir == "/" { "/".to_string() } else { format!("{dir}/") };
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|f| f.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
            .collect();
        names.dedup();
        if dir == "/" {
            for d in ["bin", "etc", "home", "root", "tmp", "usr", "var", "workspace"] {
                if !names.iter().any(|n| n == d) {
                    names.push(d.to_string());
                }
            }
            names.sort();
        }
        (!names.is_empty()).then_some(names)
    }

    pub(crate) fn run_argv(&mut self, argv: &[String]) -> Output {
        let ok = |stdout: String| Output {
            stdout,
            ..Output::default()
        };
        let fail = |stderr: String, code: i32| Output {
            stderr,
            code,
            ..Output::default()
        };
        let Some(cmd) = argv.first() else {
            return Output::default();
        };
        let args = &argv[1..];
        let base = cmd.rsplit('/').next().unwrap_or(cmd);
        match base {
            "echo" => {
                let (newline, args) = match args.first().map(String::as_str) {
                    Some("-n") => (false, &args[1..]),
                    _ => (true, args),
                };
                let mut s = args.iter().map(|a| self.expand(a)).collect::<Vec<_>>().join(" ");
                if newline {
                    s.push('\n');
                }
                ok(s)
            }
            "hostname" => ok(format!("{}\n", self.env.get("HOSTNAME").cloned().unwrap_or_default())),
            "pwd" => ok(format!("{}\n", self.cwd)),
            "true" | ":" => Output::default(),
            "false" => fail(String::new(), 1),
            "env" | "printenv" => ok(self.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect()),
            "cd" => {
                let to = self.resolve(args.first().map_or("/root", String::as_str));
                if self.list_dir(&to).is_some() || to == "/root" {
                    self.cwd = to;
                    Output::default()
                } else {
                    fail(format!("sh: 1: cd: can't cd to {}\n", args[0]), 2)
                }
            }
            "ls" => self.ls(args),
            "cat" => self.cat(args),
            "exit" => self.exit(args),
            "sh" | "bash" => match self.interactive(argv) {
                Some(Some(script)) => {
                    let mut out = self.run_script(&script);
                    out.exited = false;
                    out
                }
                _ => Output::default(),
            },
            other => fail(format!("sh: {other}: not found\n"), 127),
        }
    }

    /// `ls [-a] [PATH…]`: a file's name, a directory's entries.
    fn ls(&self, args: &[String]) -> Output {
        let targets: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
        let targets = if targets.is_empty() { vec![&self.cwd] } else { targets };
        let mut out = Output::default();
        for t in targets {
            let path = self.resolve(t);
            if self.files.contains_key(&path) {
                out.stdout.push_str(&format!("{t}\n"));
            } else if let Some(names) = self.list_dir(&path) {
                for n in names
                    .iter()
                    .filter(|n| !n.starts_with('.') || args.iter().any(|a| a.starts_with('-') && a.contains('a')))
                {
                    out.stdout.push_str(&format!("{n}\n"));
                }
            } else if matches!(path.as_str(), "/bin" | "/home" | "/root" | "/tmp" | "/usr" | "/var") {
            } else {
                out.stderr
                    .push_str(&format!("ls: cannot access '{t}': No such file or directory\n"));
                out.code = 2;
            }
        }
        out
    }

    /// `cat FILE…`: each file's text.
    fn cat(&self, args: &[String]) -> Output {
        let mut out = Output::default();
        for f in args {
            let path = self.resolve(f);
            match self.files.get(&path) {
                Some(text) => out.stdout.push_str(text),
                None if self.list_dir(&path).is_some() => {
                    out.stderr.push_str(&format!("cat: {f}: Is a directory\n"));
                    out.code = 1;
                }
                None => {
                    out.stderr.push_str(&format!("cat: {f}: No such file or directory\n"));
                    out.code = 1;
                }
            }
        }
        out
    }

    /// `exit [N]`: the shell ends with N (its low byte).
    fn exit(&self, args: &[String]) -> Output {
        let code = match args.first() {
            None => 0,
            Some(n) => match n.parse::<i32>() {
                Ok(n) => n & 0xff,
                Err(_) => {
                    return Output {
                        stderr: format!("sh: 1: exit: Illegal number: {n}\n"),
                        code: 2,
                        exited: true,
                        ..Output::default()
                    };
                }
            },
        };
        Output {
            code,
            exited: true,
            ..Output::default()
        }
    }

    /// `$NAME` and `${NAME}` from the environment.
    fn expand(&self, word: &str) -> String {
        if let Some(name) = word.strip_prefix("${").and_then(|w| w.strip_suffix('}')) {
            return self.env.get(name).cloned().unwrap_or_default();
        }
        if let Some(name) = word.strip_prefix('$').filter(|n| !n.is_empty()) {
            return self.env.get(name).cloned().unwrap_or_default();
        }
        word.to_string()
    }
}

/// Split a script into commands at `;` and new lines outside quotes.
fn split_commands(script: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote) = (Vec::new(), String::new(), None::<char>);
    for c in script.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, ';' | '\n' | '\r') => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().filter(|c| !c.trim().is_empty()).collect()
}

/// Shell words: whitespace-separated, with single and double quotes.
fn words(command: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None::<char>, false);
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// A pod's stream (exec, port-forward) needs a node to reach: as the API server says it when the
/// pod has none yet.
pub(crate) fn on_a_node(pod: &Value, name: &str) -> Result<(), ApiError> {
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() {
        return Err(status::bad_request(&format!(
            "pod {name} does not have a host assigned"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session {
            command: vec!["sh".into()],
            pod: "namzu-ws-a".into(),
            namespace: "agents".into(),
            container: "agent".into(),
            env: BTreeMap::from([("HOSTNAME".to_string(), "namzu-ws-a".to_string())]),
            stdin: true,
            stderr: true,
            tty: false,
        }
    }

    #[test]
    fn the_shell_runs_its_builtins() {
        let mut sh = Shell::new(&session());
        assert_eq!(
            sh.run_script("echo 'hello world'; hostname").stdout,
            "hello world\nnamzu-ws-a\n"
        );
        assert_eq!(sh.run_script("cat /etc/hostname").stdout, "namzu-ws-a\n");
        assert!(sh.run_script("ls").stdout.contains("README.md"));
        let missing = sh.run_script("frobnicate");
        assert_eq!(
            (missing.stderr.as_str(), missing.code),
            ("sh: frobnicate: not found\n", 127)
        );
        let exit = sh.run_script("exit 3; echo never");
        assert_eq!((exit.code, exit.exited, exit.stdout.as_str()), (3, true, ""));
        assert_eq!(
            sh.interactive(&["sh".into(), "-c".into(), "exit 2".into()]),
            Some(Some("exit 2".into()))
        );
    }

    #[test]
    fn a_terminal_echoes_erases_and_interrupts() {
        let mut t = Terminal::default();
        let (echo, inputs) = t.feed(b"lx\x7fs\r");
        assert_eq!(echo, b"lx\x08 \x08s\r\n");
        assert_eq!(inputs, [Input::Line("ls".into())]);
        let (echo, inputs) = t.feed(b"ab\x03\x1b[A\x04");
        assert_eq!(echo, b"ab^C\r\n");
        assert_eq!(inputs, [Input::Interrupt, Input::Eof]);
    }

    #[test]
    fn protocols_and_exit_statuses() {
        assert_eq!(
            choose_protocol("v4.channel.k8s.io, v5.channel.k8s.io"),
            Some("v5.channel.k8s.io")
        );
        assert_eq!(choose_protocol("v4.channel.k8s.io"), Some("v4.channel.k8s.io"));
        assert_eq!(choose_protocol("channel.k8s.io"), None);
        assert_eq!(exit_status(&[], 0)["status"], "Success");
        assert_eq!(
            exit_status(&["false".into()], 1)["details"]["causes"][0]["message"],
            "1"
        );
    }
}
