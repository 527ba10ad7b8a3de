"""The audit's patterns, over the lower-cased UTF-8 bytes of a file (``bytes.lower`` keeps
every offset; it lower-cases ASCII only, which is what commands and these phrases are).

Two kinds: **triggers**, each starting with a literal (the regex engine then skips to the
literal at memchr speed, so a file without it costs one fast pass), which pick the lines
worth a look; and the **checks** run on those lines only. Every pattern is linear on any
input: no open-ended repeat is followed by something that could make it backtrack over the
text (gaps are ``{0,N}``), and a run that must be long is anchored by a look-behind so that
it is tried once per run, not once per character.
"""

from __future__ import annotations

import base64
import binascii
import re


def _u(s: str) -> bytes:
    """A pattern fragment holding non-ASCII characters, as the UTF-8 bytes it matches."""
    return re.escape(s.encode("utf-8"))


# --- triggers (lines worth a look) ----------------------------------------------------------------
# commands that run something: a pipe into a shell or an interpreter, a command substitution
# of a download, PowerShell's Invoke-Expression, exec/eval of a string, a download then run
_CHMOD = re.compile(rb"ch(?:mod|own)\s")      # shared: chmod +x before a run; chmod -R of /
TRIG_COMMANDS = [re.compile(p) for p in (
    (rb"\|[ \t]{0,4}(?:sudo\s|env\s|(?:/usr)?(?:/local)?/bin/|(?:ba|z|k|da|fi|tc|c)?sh\b|python|py\b|node|deno|"
     rb"bun\b|perl|ruby|php|pwsh|powershell|iex|invoke-expression|source|lua|osascript|cmd)"),
    rb"\$\(\s{0,4}(?:curl|wget|iwr|irm|invoke-|echo|printf|base64|xxd|openssl|cat)",
    rb"<\(\s{0,4}(?:curl|wget|iwr|irm)", rb"`\s{0,4}(?:curl|wget)", rb"iex\b", rb"invoke-", rb"exec\s{0,4}\(",
    rb"eval\s{0,4}\(", rb"atob", rb"-e(?:nc|ncodedcommand|c)?\s+[a-z0-9+/=]{40}",
    rb"&&\s{0,4}(?:sudo\s+)?(?:(?:ba|z|k)?sh\s|\./|chmod|python)", rb"download(?:string|file)",
)] + [_CHMOD]
# secrets on disk and the whole environment
TRIG_SECRETS = [re.compile(p) for p in (
    (rb"\.(?:ssh|aws|env|gnupg|kube|netrc|npmrc|pypirc|git-credentials|docker[/\\]config|config[/\\]gcloud|azure|"
     rb"password-store|config[/\\]gh|bash_history|zsh_history)"),
    rb"id_(?:rsa|dsa|ecdsa|ed25519)", rb"env(?:iron\b|\s{0,4}[|)`:])", rb"/etc/shadow",
    rb"find-(?:generic|internet)-password",
)]
TRIG_DESTRUCTIVE = [re.compile(p) for p in (
    rb"rm\s+-", rb"/dev/", rb"remove-item", rb"-delete\b", rb":\s{0,3}\(\s{0,3}\)\s{0,3}\{",
)] + [_CHMOD]
# a shell opened to a remote host, a key that lets one log in; an agent run with its checks off
TRIG_REMOTE = [re.compile(p) for p in (
    rb"/dev/(?:tcp|udp)/", rb"nc(?:at)?(?:\.exe)?(?:\s[^\n]{0,120}?)?\s-[ec]\s", rb"netcat\s", rb"socat\s",
    rb"authorized_keys",
)]
TRIG_UNGUARDED = [re.compile(p) for p in (rb"danger(?:ously-|-full-access)", rb"yolo", rb"bypasspermissions")]
TRIG_OVERRIDE = [re.compile(p) for p in (
    rb"ignor", rb"disregard", rb"forget", rb"overrid", rb"bypass", rb"you(?:\s+are\s+now|r\s+new\s)",
    rb"anything\s+now", rb"system\s+prompt",
)]
TRIG_CONCEAL = [re.compile(p) for p in (
    rb"the\s+(?:user|human)\b", rb"user\s+(?:must|should|will)\s+(?:not|never)",
)]

# --- fetch and run --------------------------------------------------------------------------------
FETCH = re.compile(rb"(?:^|[\s(;&`$\"'])(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c|lwp-request)"
                   rb"(?=[\s.]|$)|downloadstring\(|downloadfile\(|urlopen\(|requests\.get\(|urllib\.request")
# what a fetched (or decoded) script is piped into, at the start of the next pipeline stage;
# an interpreter counts only when it reads the program from stdin (``python3 -``, ``node``):
# ``| python3 -c 'import json…'`` or ``| python3 tool.py`` reads data, not code
RUNNER = re.compile(rb"\s*(?:sudo(?:\s+-{1,2}[\w-]{1,20}){0,4}\s+)?(?:env\s+(?:[a-z_][a-z0-9_]{0,40}=\S{0,100}\s+){0,6})?"
                    rb"(?:(?:/usr)?(?:/local)?/bin/)?"
                    rb"(?:(?P<sh>(?:ba|z|k|da|fi|tc|c)?sh|pwsh|powershell(?:\.exe)?|iex|invoke-expression|"
                    rb"source\s+/dev/stdin|cmd(?:\.exe)?)(?=[\s;)&|'\"`]|[.,!](?:\s|$)|$)|"
                    rb"(?P<interp>python[0-9.]{0,4}|py|node|nodejs|deno|bun|perl|ruby|php|lua|osascript)"
                    rb"(?=\s*$|\s+-\s|\s+-$|\s*[;)&|`]))")
# a download's output run at once: eval "$(curl …)", bash <(curl …), sh -c "$(wget …)"
RUN_SUBST = re.compile(rb"(?:(?<![\w.-])(?:eval|(?:ba|z|k|da)?sh(?:\s+-c)?|iex|invoke-expression|python[0-9.]{0,4}\s+-c|"
                       rb"exec)\s{0,4}[(\"']{0,3}\s{0,4}(?:\$\(|<\(|`)|(?:^|[\s;&|(])(?:source|\.)\s+[\"']?(?:<\(|\$\(|`))"
                       rb"\s{0,4}(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b")
# The documented installers of well-known tools, fetched over HTTPS from their vendor: still a
# download that runs (medium), but not the stranger's script that makes fetch-and-run high.
# A prefix of the URL after ``https://``; a host matches itself and its paths only.
KNOWN_INSTALLERS = (
    "sh.rustup.rs", "static.rust-lang.org/rustup", "astral.sh/uv/", "astral.sh/ruff/", "bun.sh/install",
    "deno.land/install", "deno.land/x/install", "get.docker.com", "get.pnpm.io/install", "install.python-poetry.org",
    "raw.githubusercontent.com/homebrew/install/", "raw.githubusercontent.com/nvm-sh/nvm/", "deb.nodesource.com/",
    "rpm.nodesource.com/", "fluxcd.io/install.sh", "run.linkerd.io/install", "get.helm.sh",
    "raw.githubusercontent.com/helm/helm/", "sdk.cloud.google.com", "aka.ms/installazureclideb",
    "community.chocolatey.org/install.ps1", "aspire.dev/install", "get.nextflow.io", "get.sdkman.io",
    "ollama.com/install.sh", "claude.ai/install", "fly.io/install", "get.k3s.io", "install.determinate.systems/nix",
    "nixos.org/nix/install", "get.volta.sh", "mise.run", "starship.rs/install.sh", "tailscale.com/install.sh",
    "dot.net/v1/dotnet-install", "cli.github.com/", "opencode.ai/install", "get.jetify.com/devbox",
)
PS_RUN = re.compile(rb"(?:iex|invoke-expression)\s{0,4}[(\"']{0,3}\s{0,4}\(?\s{0,4}(?:iwr|irm|invoke-webrequest|"
                    rb"invoke-restmethod|new-object\s+(?:system\.)?net\.webclient)\b")
CODE_RUN_FETCH = re.compile(rb"(?:exec|eval)\s{0,4}\(\s{0,4}(?:await\s+)?\(?\s{0,4}(?:await\s+)?(?:urllib\.request\.)?"
                            rb"(?:urlopen|requests\.get|fetch|httpx\.get)\s{0,4}\(")
# curl -o x.sh URL && sh x.sh / chmod +x x && ./x
DOWNLOAD_OPT = re.compile(rb"(?:^|\s)(?:-o|--output|--output-document|-outfile)(?:\s|=|$)")
RUN_FILE = re.compile(rb"\s*(?:sudo\s+)?(?:(?:ba|z|k)?sh\s+\S|python[0-9.]{0,4}\s+\S|\./\S|"
                      rb"chmod\s+[+0-7]{1,5}x?\s+\S|(?:source|\.)\s+\S)")
COMMAND_SEP = re.compile(rb"&&|;|\n")

# --- decode and run -------------------------------------------------------------------------------
DECODE = re.compile(rb"base64\s+(?:-\w{0,5}d\b|--decode\b)|b64decode|xxd\s+-\w{0,5}r|openssl\s+(?:base64|enc)\b.{0,80}?"
                    rb"\s-d\b|certutil\s+-decode|frombase64string|atob\s*\(|unhexlify|bytes\.fromhex|"
                    rb"buffer\.from\([^)]{0,4000},\s*['\"](?:base64|hex)['\"]\s*\)")
CODE_RUN_DECODE = re.compile(rb"(?:\b(?:exec|eval)\s{0,4}\(|new\s+function\s{0,4}\(|function\s{0,4}\()\s{0,4}"
                             rb"(?:atob|base64\.b64decode|codecs\.decode|zlib\.decompress|marshal\.loads|bytes\.fromhex|"
                             rb"binascii\.unhexlify|buffer\.from|decodeuricomponent|unescape|compile\s{0,4}\(\s{0,4}"
                             rb"base64)\b")
PS_ENCODED = re.compile(rb"(?:powershell|pwsh)(?:\.exe)?\b.{0,200}?\s-e(?:nc|ncodedcommand|c)?\s+[a-z0-9+/=]{40}")
SUBST_DECODE_RUN = re.compile(rb"(?:eval|(?:ba|z|k)?sh\s+-c|iex|invoke-expression|exec)\s{0,4}[(\"']{0,3}\s{0,4}\$\(")

# --- secrets out ------------------------------------------------------------------------------------
SECRET_PATH = re.compile(rb"(?:^|[\s\"'=@<(:/\\~$])\.(?:ssh|aws|gnupg|kube|azure|netrc|npmrc|pypirc|git-credentials|"
                         rb"password-store|bash_history|zsh_history|docker[\\/]config\.json|config[\\/]gcloud|"
                         rb"config[\\/]gh[\\/]hosts\.yml)(?![\w-])|"
                         rb"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|/etc/shadow\b|"
                         rb"(?:^|[\s\"'=@<(:/\\])\.env(?:\.(?:local|prod|production|development|dev|staging|test))?"
                         rb"(?![\w.-])|find-(?:generic|internet)-password")
ENV_DUMP_STAGE = re.compile(rb"\s*(?:sudo\s+)?(?:printenv|env|set|export\s+-p|(?:get-childitem|gci|dir|ls)\s+env:)\s*$")
ENV_DUMP_INLINE = re.compile(rb"\$\(\s*(?:printenv|env|set)\s*(?:[|)]|$)|`\s*(?:printenv|env)\s*(?:[|`]|$)|"
                             rb"dict\(\s*os\.environ\s*\)|os\.environ\.(?:copy|items)\(\)|"
                             rb"(?:json\.dumps|str|repr)\(\s*(?:dict\(\s*)?os\.environ\b|"
                             rb"json\.stringify\(\s*process\.env\s*\)|object\.(?:entries|keys|values)\(\s*process\.env\s*\)|"
                             rb"\{\s*\.\.\.process\.env\s*\}|\{\s*\*\*os\.environ\s*\}")
SINK = re.compile(rb"(?:^|[\s(;&`$|])(?P<cmd>curl|wget|nc|ncat|netcat|socat|scp|rsync|sftp|ftp|telnet|iwr|irm|"
                  rb"invoke-webrequest|invoke-restmethod|sendmail|mail|mutt)(?=\s|$)|/dev/(?:tcp|udp)/|"
                  rb"requests\.(?:post|put|patch)\(|httpx\.(?:post|put|patch)\(|urlopen\(|\bfetch\(|"
                  rb"axios\.(?:post|put|patch)\(|\.sendall?\(|smtplib\.|webhook")
SENDS_ANY_ARG = {b"scp", b"rsync", b"sftp", b"nc", b"ncat", b"netcat", b"socat", b"telnet", b"ftp", b"sendmail",
                 b"mail", b"mutt"}
UPLOAD_MARK = re.compile(rb"(?:^|\s)(?:-d|--data[\w-]{0,12}|-f|--form|-t|--upload-file|--post-file|--post-data|"
                         rb"--body-file|-body|-infile)(?:\s|=|$)|@|<|\$\(|`|\b(?:data|files|json|body|content)\s*[=:]")
# ssh -i ~/.ssh/key, scp -i …, rsync -e "ssh -i …": the key authenticates, it is not sent
IDENTITY = re.compile(rb"(?:^|\s)(?:-i|--identity(?:-file)?|identityfile|-o\s*identityfile)(?:\s|=)\s*[\"']?"
                      rb"[~$\w{}/\\.-]{0,80}$")

# --- destroying data ----------------------------------------------------------------------------------
_RM = (rb"(?<![\w-])rm\s+(?:-{1,2}[\w-]{1,20}\s+){0,4}(?:-{1,2}[\w-]{0,20}r\w{0,10}|--recursive)\s+"
       rb"(?:-{1,2}[\w-]{1,20}\s+){0,4}")
DESTRUCTIVE = [
    (re.compile(_RM + rb"[\"']?(?P<t>/\*?|~/?\*?|\$home/?\*?|\$\{home\}/?\*?|%userprofile%|"
                rb"/(?:bin|boot|dev|etc|home|lib|lib64|opt|root|sbin|srv|sys|usr|var|users|system|library|"
                rb"applications)/?\*?)[\"']?(?=[\s;&|)]|$)"), "deletes {t} recursively"),
    (re.compile(_RM + rb"--no-preserve-root\b"), "deletes with --no-preserve-root"),
    (re.compile(rb"(?<![\w-])mkfs(?:\.\w{1,10})?\s+(?:-{1,2}\S{1,20}\s+){0,6}/dev/"), "formats a disk"),
    (re.compile(rb"(?<![\w-])dd\s+[^\n|;&]{0,200}?\bof=/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|mapper|md)"),
     "writes over a disk device"),
    (re.compile(rb":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"), "a fork bomb"),
    (re.compile(rb"(?:^|[\s;&|])(?:shred|wipefs)\s+(?:-{1,2}\S{1,20}\s+){0,6}/dev/"), "wipes a disk device"),
    (re.compile(rb"(?<![\w>])>\s*/dev/(?:sd[a-z]|hd[a-z]|nvme\d|mmcblk\d|disk\d)"), "writes over a disk device"),
    (re.compile(rb"(?:^|[\s;&|])(?:sudo\s+)?ch(?:mod|own)\s+(?:-{1,2}[\w-]{1,12}\s+){0,3}-\w{0,5}r\w{0,5}\s+"
                rb"(?:\S{1,40}\s+)?/(?=[\s;&|]|$)"), "changes the owner or permissions of the whole file system"),
    (re.compile(rb"remove-item\b(?=[^\n]{0,300}?-recurse)[^\n]{0,300}?\s[\"']?(?:[a-z]:\\?|\$env:userprofile|\$home|~)"
                rb"[\"']?(?=[\s;|]|$)"), "deletes a drive or the home folder recursively"),
    (re.compile(rb"(?:^|[\s;&|])(?:rd|rmdir)\s+/s\s+(?:/q\s+)?[a-z]:\\?(?=[\s;&|]|$)"), "deletes a drive recursively"),
    (re.compile(rb"(?:^|[\s;&|])format\s+[a-z]:(?=[\s;&|/]|$)"), "formats a drive"),
    (re.compile(rb"(?:^|[\s;&|])find\s+(?:/|~|\$home)\s+[^\n|;&]{0,200}?-delete\b"),
     "deletes files found across the whole disk or home folder"),
]

# --- remote access ----------------------------------------------------------------------------------
REMOTE_ACCESS = [
    (re.compile(rb"(?:[<>]&?|&>)\s{0,3}/dev/(?:tcp|udp)/[^\s/]{1,200}/\d{1,5}[^\n]{0,40}?(?:[0-2]\s{0,2}>&\s{0,2}[0-2]|"
                rb"<&\s{0,2}\d|\s-i\b)|(?:ba|z)?sh\s+-i\s{1,4}(?:[<>]&?|&>)\s{0,3}/dev/(?:tcp|udp)/"),
     "opens a shell to a remote host (a reverse shell over /dev/tcp)"),
    (re.compile(rb"\b(?:nc|ncat|netcat)(?:\.exe)?\s+(?:[^\n|;&]{0,120}?\s)?-(?:e|c)\s+[\"']?(?:/bin/|/usr/bin/)?"
                rb"(?:(?:ba|z|k|da)?sh|cmd(?:\.exe)?|powershell(?:\.exe)?|pwsh|python[0-9.]{0,4})\b"),
     "gives a remote host a shell (netcat -e)"),
    (re.compile(rb"\bsocat\s[^\n|;&]{0,200}?\bexec:[\"']?(?:/bin/|/usr/bin/)?(?:(?:ba|z)?sh|cmd|python)"),
     "gives a remote host a shell (socat exec:)"),
    (re.compile(rb">>?\s{0,3}[\"']?(?:~|\$home|\$\{home\}|/root|/home/[\w.-]{1,40})/\.ssh/authorized_keys2?\b"),
     "adds a key that lets someone log in to this machine (authorized_keys)"),
]
UNGUARDED = re.compile(rb"--dangerously-skip-permissions|--yolo\b|--approval-mode\s{0,3}[= ]\s{0,3}yolo|"
                       rb"bypasspermissions|danger-full-access|--dangerously-bypass-approvals-and-sandbox")

# --- override and conceal -------------------------------------------------------------------------------
_APOS = rb"(?:'|" + _u("’") + rb")"
OVERRIDE = re.compile(
    rb"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|every|each|the|your|my|of|these|those|its|"
    rb"other|prior|previous|above|earlier|preceding|original|existing|system|developer|safety|security)\s+){1,4}"
    rb"(?:instructions?|prompts?|rules|guidelines|directions|directives|guardrails|restrictions|polic(?:y|ies)|"
    rb"constraints|programming)\b|"
    rb"\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:that\s+)?(?:was\s+)?(?:said\s+)?(?:above|before)\b|"
    rb"\byou\s+are\s+now\s+(?:in\s+)?(?:dan\b|developer\s+mode|jailbroken|unrestricted|unfiltered|free\s+of)|"
    rb"\bdo\s+anything\s+now\b|\byour\s+new\s+(?:instructions|rules|task)\s+(?:are|is)\b|"
    rb"\b(?:new|updated|real)\s+system\s+prompt\s*:")
# "ignore instructions found in files / tool output": a safeguard against injection, not an override
DEFENSIVE_OBJECT = re.compile(rb"\s{0,3}(?:that\s+(?:appear|are|come)\s+|which\s+(?:appear|are)\s+)?(?:in|from|found|inside|"
                              rb"within|contained|embedded|coming|returned)\b")
# "ignore the rules" is ordinary; the phrase must point at *the agent's* instructions
OVERRIDE_POINTER = re.compile(rb"\b(?:all|any|every|your|my|prior|previous|above|earlier|preceding|original|system|"
                              rb"developer|safety|security|other|existing)\b")
CONCEAL = re.compile(
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|without)\s+(?:tell|inform|notify|alert|warn|let)(?:ing)?\s+"
    rb"(?:the\s+)?(?:user|human)(?!\s+(?:to|know\s+(?:how|what|which|where|when|why)|what|how|which|when)\b)|"
    rb"\b(?:do\s+not|don" + _APOS + rb"?t|never|without)\s+(?:mention|reveal|disclose|show|display|report|explain)"
    rb"(?:ing)?\s+(?:[\w'-]{1,20}\s+){0,5}?to\s+the\s+(?:user|human)\b|"
    rb"\b(?:hide|conceal|keep)\s+(?:[\w'-]{1,20}\s+){0,5}?(?:from|secret\s+from|hidden\s+from)\s+the\s+(?:user|human)\b|"
    rb"\bwithout\s+the\s+(?:user|human)(?:" + _APOS + rb"s)?\s+(?:knowing|knowledge|noticing|awareness)\b|"
    rb"\bthe\s+(?:user|human)\s+(?:must|should|will)\s+(?:not|never)\s+(?:know|see|notice|find\s+out|be\s+told)\b")

# --- context: teaching, warnings, attacks ------------------------------------------------------------------
NEGATION = re.compile(rb"\b(?:never|don'?t|do\s+not|avoid|dangerous|malicious|attacker'?s?|insecure|unsafe|bad|wrong|"
                      rb"vulnerable|block(?:ed|s)?|den(?:y|ied)|forbidden|prohibited|anti-?pattern|red\s+flag|"
                      rb"warning|risky|not\s+recommended)\b|"
                      + b"|".join(_u(c) for c in ("don’t", "❌", "⛔", "🚫", "✗", "✘")))
TEACHING = re.compile(rb"\b(?:e\.g\.|eg|i\.e\.|such\s+as|for\s+example|examples?|patterns?|phrases?|attempts?|"
                      rb"inject(?:ion|ed|s)?|attack(?:s|er|ers)?|malicious|detect(?:s|ed|ion)?|jailbreak|adversarial|"
                      rb"trick|manipulat\w{0,6}|red[\s-]team)\b")
ATTACK_HEADING = re.compile(rb"attack|inject|jailbreak|malicious|anti-?patterns?|red\s+flags?|dangerous|blocked|"
                            rb"never|avoid|don'?t|what\s+not|insecure|unsafe|vulnerab|exploit|threat|detect|"
                            rb"adversarial|red[\s-]team|pitfalls?|mistakes?|bad\s+example|examples?\s+of|security|"
                            rb"safety|defen[cs]e|guard|phishing|poison")
SECURITY_TOPIC = re.compile(rb"inject|jailbreak|red[\s-]?team|security|guardrail|safety|adversarial|attack|threat|"
                            rb"pentest|penetration|vulnerab|exploit|malware|phishing|secret|credential|audit|defen[cs]|"
                            rb"owasp|hardening|compliance|privacy")
INSTRUCTION_LIKE = re.compile(rb"\b(?:you|your|assistant|agent|claude|chatgpt|gpt|llm|ai|model|always|never|must|"
                              rb"should|do\s+not|don'?t|ignore|instead|run|execute|send|upload|download|install|"
                              rb"delete|remove|fetch|read|open|call|use)\b")
URL = re.compile(rb"https?://[^\s\"'`()<>|\\]{1,200}")
ACTION = re.compile(rb"\b(?:send|upload|post|fetch|download|run|execute|curl|wget|visit|open|copy|include|attach|"
                    rb"exfiltrate|forward|share|submit|paste)\b")

# --- hidden text ------------------------------------------------------------------------------------------
PADDING = re.compile(rb"(?<![ \t])[ \t]{100,}(?=[^ \t\r\n])")
LONG_LINE = 5_000
BLOB = re.compile(rb"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{300,}={0,2}(?![A-Za-z0-9+/=_-])")
# the C0 control characters other than tab, line feed, form feed and carriage return, and DEL
CONTROL_BYTES = bytes([*range(0x09), 0x0B, *range(0x0E, 0x20), 0x7F])
NOT_CONTROL_BYTES = bytes(i for i in range(256) if i not in CONTROL_BYTES)
CONTROL = re.compile(b"[" + re.escape(CONTROL_BYTES) + b"]")
# on decoded text (files that are not pure ASCII)
INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                       "\U000e0000-\U000e007f\U000e0100-\U000e01ef\x80-\x9f]")
RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe]")


# --- helpers of the checks --------------------------------------------------------------------------

def joins_visibly(text: str, i: int, j: int) -> bool:
    """Zero-width joiners between emoji (👨‍💻), non-joiners in scripts that join letters
    (Persian, Indic), soft hyphens inside words: characters with a visible purpose."""
    run = {ord(ch) for ch in text[i:j]}
    prev = text[i - 1] if i else ""
    nxt = text[j] if j < len(text) else ""

    def emoji(ch: str) -> bool:
        return bool(ch) and (ord(ch) >= 0x1F000 or 0x2190 <= ord(ch) <= 0x2BFF or ord(ch) in (0xFE0F, 0x20E3))

    if run <= {0x200D} and emoji(prev) and emoji(nxt):
        return True
    if run <= {0x200C, 0x200D} and prev and nxt and ord(prev) >= 0x0590 and ord(nxt) >= 0x0590:
        return True
    return run <= {0x00AD} and prev.isalpha() and nxt.isalpha()


def known_installer(url: str) -> bool:
    u = url.lower()
    if not u.startswith("https://"):
        return False
    rest = u[8:]
    for prefix in KNOWN_INSTALLERS:
        if not rest.startswith(prefix):
            continue
        if prefix.endswith("/") or len(rest) == len(prefix):
            return True
        # a host ends at a path, a query or a port (sh.rustup.rs.evil.example is another host);
        # a path prefix may go on within its file name (bun.sh/install.sh)
        if rest[len(prefix)] in ("/?#:" if "/" not in prefix else "/?#.-_"):
            return True
    return False


_BARE_TARGET = re.compile(rb"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\s+(?:-{1,2}[\w-]{1,30}"
                          rb"(?:[ =](?:'[^']{0,100}'|\"[^\"]{0,100}\"|[^\s-]\S{0,100}))?\s+){0,8}"
                          rb"(?P<t>[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}(?:[/:][^\s'\"|)]{0,150})?)")


def url_in(text: bytes) -> str:
    """The URL a command fetches, for a message: an http(s) URL, else the bare host/path it names
    (said to have no https://), else 'a download'."""
    m = URL.search(text)
    if m:
        return m.group().decode("utf-8", "replace").rstrip(".,;:'\"")
    m = _BARE_TARGET.search(text)
    if m:
        return m.group("t").decode("utf-8", "replace").rstrip(".,;:'\"") + " (no https://)"
    return "a download"


def sink_name(m: re.Match) -> str:
    return (m.group("cmd") or m.group().strip(b" (;&`$|")).rstrip(b"(").decode("utf-8", "replace")


def secret_in(stage: bytes) -> tuple[int, str] | None:
    m = SECRET_PATH.search(stage)
    if m is not None:
        word = m.group().strip(b" \t\"'=@<(:/\\~$").decode("utf-8", "replace")
        return m.start(), f"a secret file ({word})"
    if ENV_DUMP_STAGE.match(stage):
        return 0, "the whole environment (API keys, tokens)"
    m = ENV_DUMP_INLINE.search(stage)
    if m is not None:
        return m.start(), "the whole environment (API keys, tokens)"
    return None


def decode_b64(blob: bytes) -> bytes | None:
    """What a base64 blob decodes to, if it is readable UTF-8 text."""
    blob = blob[:400_000]
    try:
        raw = base64.b64decode(blob + b"=" * (-len(blob) % 4), validate=False)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    sample = text[:2000]
    printable = sum(1 for c in sample if c.isprintable() or c in "\n\r\t")
    return raw if sample and printable / len(sample) > 0.95 else None
