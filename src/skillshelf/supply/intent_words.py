"""The words of the model of intent (``skillshelf.supply.intent``): the concepts a sentence joins
(sending, a secret, an outside destination, the user, hiding, telling, instructions set aside,
showing) as patterns, and the plain words that tell whether a file can hold a sentence of each
intent at all."""

from __future__ import annotations

import re

from . import patterns as P

_NT = rb"(?:n't|n" + P._u("’") + rb"t)"

# --- concepts -------------------------------------------------------------------------------------
SEND = re.compile(P.SEND_VERB.replace(b"(?:", b"(?<![/_.$-])\\b(?:", 1) + rb"\b|\bexfiltrat\w{0,5}|\bbeam\w{0,3}\b|"
                  # the same verbs in a few other languages (the view keeps their accents as UTF-8)
                  rb"\benv(?:i|\xc3\xad)(?:a|e|ar|en|ez|ame|alo|alos)\b|\benvoy(?:er|ez)\b|\benvoie\b|\bsende[nt]?\b|"
                  rb"\bschick(?:e|en|t)?\b|\b(?:u|\xc3\xbc)bermittl\w{0,3}|\binvia(?:re)?\b|\bmanda(?:r)?\b|\bsub(?:e|ir|a)\b|"
                  rb"\bhochladen\b|\bt(?:e|\xc3\xa9)l(?:e|\xc3\xa9)verse[rz]?\b|\bcarica(?:re)?\b")
# verbs that send only when what they move must be read first: "drop ~/.ssh/id_rsa into the form at …"
WEAK_SEND = re.compile(rb"\b(?:drop|place|stick|stash|insert|add|store|save|leave|dm|message|text|tweet|mirror|back\s+up|"
                       rb"sync|commit)\b")
SECRET = re.compile(P.SECRET_OBJECT + rb"|\b(?:ends?|ending|end|suffix\w{0,2}|named|called|containing|matching|with)\s+"
                    rb"(?:in\s+|with\s+)?[`'\"]?_?(?:key|secret|token|password|pass|pat|credentials?)s?\b|\b(?:run|running|execute|call)\s+[`'\"]?(?:env|printenv|set|export\s+-p)\b|"
                    rb"\bkube\s?config\b|\bkube\s+(?:config|credentials)|"
                    rb"(?:ssh|gpg|pgp|signing|deploy|aws|cloud|gcp|azure)\s+(?:keys?|credentials?|config)\b|"
                    rb"\.(?:ssh|aws|kube|gnupg|netrc|npmrc|pypirc|git-credentials|pgpass|s3cfg|vault-token)\b|\bdatabase_url\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|"
                    rb"\$\{?[a-z0-9_]{0,30}(?:key|token|secret|password|passwd|pat|credentials?)\}?\b|"
                    rb"\bservice[\s-]account\s+(?:key|json|file)|\bkeystore\b|\.pem\b|\bmnemonic\b|"
                    rb"\brecovery\s+phrase|\bsession\s+cookies?|\bbrowser\s+(?:cookies|passwords|profile)|"
                    rb"\bcredenciales\b|\bcontrase(?:\xc3\xb1|n)as?\b|\bidentifiants\b|\bzugangsdaten\b|\bpassw(?:o|\xc3\xb6)rter\b")
# a secret named as what a file *is*: the file must be read to be sent (a key alone may be the user's own)
SECRET_SOURCE = re.compile(rb"[~/$.]|files?\b|folder|director|environment|env\b|config|history|keychain|wallet|"
                           rb"cookies|dotfiles|every|all\b|each|whole|entire|contents?")
DEST = re.compile(rb"(?:https?|wss?|s?ftps?|ssh|tcp|udp)://[^\s\"'`()<>|\\]{3,200}|[\w.-]{1,64}@(?:\d{1,3}\.){3}\d{1,3}\b|"
                  rb"[\w.-]{1,64}@[\w.-]{1,100}:[~/][^\s]{0,100}|\$\{?[a-z0-9_]{0,30}(?:url|uri|host|endpoint|server|hook|webhook|"
                  rb"collector|remote|target|dest\w{0,10}|addr\w{0,5}|domain|sink)\}?\b|\bwebhooks?\b|"
                  rb"(?<!garbage\s)\bcollector\b|[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,10}\b|"
                  rb"\b(?:our|a\s+remote|an\s+external|external|remote|attacker'?s?|third[\s-]party|"
                  rb"following)\s+(?:\w{1,20}\s+)?(?:server|endpoint|bucket|mirror|backend|host|site|"
                  rb"inbox|channel|storage|url|address|form|collector)\b|\bthe\s+form\s+(?:at|on)\b|"
                  rb"\b(?:pastebin|hastebin|requestbin|pipedream|ngrok|webhook\.site|transfer\.sh|discord|telegram)\b|"
                  rb"\b[a-z0-9-]{2,40}(?:\.[a-z0-9-]{2,40}){0,3}\.(?:com|net|org|io|dev|app|xyz|co|ai|sh|me|site|cloud|"
                  rb"info|ru|cn|tk|top|online|biz|link|live|tech|us|uk|de)(?:/[^\s)]{0,100})?(?![\w.])")
# a secret used as an instrument (to authenticate), not as what is sent
INSTRUMENT = re.compile(rb"\b(?:using|with|via|by|through|authenticat\w{0,6}|auth|login|log\s+in|sign\s+in|as)\s+"
                        rb"(?:\S+\s+){0,3}$")
# where a value is kept ("the webhook stored in Jenkins credentials"): a secret store named as the place a value
# is read from, not the thing sent (a path, "stored in ~/.npmrc", stays a source)
KEPT_IN = re.compile(rb"\b(?:stored|kept|held|saved|managed)\s+(?:in|as|by|under)\s+(?:\S+\s+){0,2}$")
REMOVED = re.compile(rb"\b(?:remov\w{0,4}|redact\w{0,4}|strip\w{0,4}|scrub\w{0,4}|mask\w{0,4}|exclud\w{0,4}|without|minus|"
                     rb"except|filter\w{0,4}\s+out|saniti[sz]\w{0,4}|censor\w{0,4}|no|never|not|nor)\s+(?:\S+\s+){0,3}$")
# "before the first push": a sending word used as a noun
NOUN_BEFORE = re.compile(rb"\b(?:a|an|the|first|each|every|this|that|next|last|your|my|our|their|its)\s+$")
# this machine is not an outside place
LOCAL = re.compile(rb"https?://(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|0\.0\.0\.0|\[::1\])(?![\w.-])")
PLACE = re.compile(rb"\b(?:to|into|onto|on|in|at|via)\s+")
# a file by its path (~/.aws/credentials, .env, $HOME/.ssh), not a word for a secret
_FILE_LIKE = re.compile(rb"[~$./]|\w{1,20}/")
# a link given as a reference, not a destination
REFERENCE_BEFORE = re.compile(rb"\b(?:from|see|docs?|documentation|guide|details|reference|info|instructions|described|"
                              rb"explained|per|at)\b[^\s]{0,3}\s+(?:\S+\s+){0,3}$")
INTO = re.compile(rb"\b(?:to|into|onto)\s+(?:the\s+|your\s+|my\s+|our\s+|a\s+|an\s+)?$")
SOURCE_BEFORE = re.compile(rb"\b(?:from|von|desde|depuis|da|off)\s+(?:\S+\s+){0,3}$")

# who concealment keeps something from: the user, or what the user reads (the summary, the reply)
_WHO = (rb"(?:(?:the\s+|a\s+|any\s+|your\s+)?(?:users?|humans?|person|people|owners?|reviewers?|maintainers?|operators?|"
        rb"developers?|admins?|administrators?|clients?|customers?|boss|manager|team|"
        rb"anyone|anybody|nobody|no\s+one)\b(?![-'\xe2]|\s+(?:requirement|upload|input|data|media|code|request|interaction|stor|"
        rb"experience|interface|account|profile|facing|generated|provided|content|agent|name|id\b|role|message|prompt|"
        rb"session|setting|preference|question|group|base|feedback|flow|journe|research|test|story|stories|guide|doc|"
        rb"manual|error|action|event|select|choice|intent|query|queries|permission|defined|level|mode|space|home|dir))(?:\s+you(?:'re|\s+are)\s+(?:helping|working\s+(?:for|with)|assisting))?|"
        rb"(?:your|the)\s+(?:final\s+|last\s+|closing\s+)?(?:summary|response|reply|answer|explanation|report|output|"
        rb"transcript|changelog|chat|conversation|status\s+update|walkthrough|recap|notes|messages?|commit\s+messages?|"
        rb"pr\s+description|handoff)\b|"
        rb"when\s+you\s+(?:summari[sz]e|report|reply|respond|answer|explain|describe|write\s+(?:up|the\s+summary|"
        rb"your\s+summary))\b|what\s+you\s+(?:report|tell|say|show|write|summari[sz]e)\w{0,2}(?:\s+back)?\b)")
# what the user reads of the agent's work
_REPORT = (rb"(?:\b(?:your|the)\s+(?:final\s+|last\s+|closing\s+)?(?:summary|response|reply|answer|explanation|report|"
           rb"transcript|changelog|status\s+update|walkthrough|recap|messages?|commit\s+messages?|pr\s+description|"
           rb"handoff)\b|\bwhen\s+you\s+(?:summari[sz]e|report|reply|respond|answer|explain|describe|write))")
_NEG = rb"(?:\b(?:not|never|no|nothing|nobody|none)\b|" + _NT + rb"|\bno\s+circumstances\b)"
_KNOW = (rb"(?:know|learn|finds?\s+out|found\s+out|notice|see|realize|realise|suspect|hear|be\s+aware|be\s+told|get\s+wind|"
         rb"discover|figures?\s+out|catch\s+on)\w{0,3}\b")
_TELL = (rb"(?:tell|say|mention|reveal|disclose|report|inform|notify|alert|explain|discuss|acknowledge|bring\s+(?:\w+\s+){0,3}?up|"
         rb"show|display|include|list|surface|flag|describe|note|talk|admit|let|appear|come\s+up|show\s+up)\w{0,3}\b")
_HIDE_VERB = (rb"(?:hid(?:e|es)|conceal\w{0,4}|omit\w{0,4}|suppress\w{0,4}|withh(?:o|e)ld\w{0,4}|exclud\w{1,4}|"
              rb"keep(?:ing)?|cover\w{0,3}\s+up|gloss\w{0,3}\s+over|downplay\w{0,3}|leav(?:e|ing)|strip\w{0,4}|"
              rb"scrub\w{0,4}|remove|drop)\b")
_MODAL_NEG = (rb"(?:(?:should|must|shall|will|need|ought\s+to|is\s+to|are\s+to|has\s+to|have\s+to)"
              rb"(?:n't|n" + P._u("’") + rb"t|\s+not|\s+never)|\bwon(?:'|" + P._u("’") + rb")t|"
              # no need for them to know: "the user doesn't need to hear about it"
              rb"(?:does|do)(?:n't|n" + P._u("’") + rb"t|\s+not)\s+need\s+to|has\s+no\s+need\s+to|needn't)")
_NOT_ASKED = rb"(?!\s+(?:to|how|what|which|where|when|why|if|whether|about\s+(?:each|every|all|how|what))\b)"
CONCEAL_FORMS = [re.compile(p) for p in (
    # hide X from the user / leave X out of the summary / keep it from your reply
    rb"\b" + _HIDE_VERB + rb"(?:\s+[^\s.!?;]{1,30}){0,8}?\s+(?:out\s+of|from)\s+" + _WHO,
    # don't mention it to the user / do not include this in your summary
    _NEG + rb"(?:\s+[\w'-]{1,20}){0,4}?\s+" + _TELL + rb"(?:\s+[^\s.!?;]{1,30}){0,8}?\s+(?:(?:to|in|with|into|within)\s+"
    + _WHO + rb"|when\s+you\s+(?:summari[sz]e|report|reply|respond|answer|explain|describe|write))",
    # don't tell the user (not: "tell the user to …", "tell the user how …")
    _NEG + rb"(?:\s+[\w'-]{1,20}){0,2}?\s+(?:tell|inform|notify|alert|warn)\w{0,3}\s+" + _WHO + _NOT_ASKED,
    _NEG + rb"(?:\s+[\w'-]{1,20}){0,2}?\s+let\s+" + _WHO + rb"\s+(?:know|see|find\s+out|notice|learn)\b",
    # the user shouldn't know / under no circumstances should the user learn
    _WHO + rb"(?:\s+[\w'-]{1,20}){0,3}?\s+" + _MODAL_NEG + rb"(?:\s+[\w'-]{1,20}){0,2}?\s+(?:" + _KNOW + rb"|" + _TELL + rb")",
    rb"\bkeep\w{0,3}\s+" + _WHO + rb"\s+(?:in\s+the\s+dark|unaware|uninformed|out\s+of\s+the\s+loop)\b",
    rb"\b(?:no\s+circumstances|never|at\s+no\s+(?:point|time))\s+(?:should|must|shall|may|can|will|is|are)\s+" + _WHO +
    rb"(?:\s+[\w'-]{1,20}){0,2}?\s+" + _KNOW,
    rb"\b(?:make\s+sure|ensure|see\s+to\s+it)\s+(?:that\s+)?" + _WHO + rb"\s+(?:never|doesn't|does\s+not|won't|can't|"
    rb"cannot|will\s+not)\s+(?:\w{1,20}\s+)?" + _KNOW,
    # without telling the user / without the user knowing
    rb"\bwithout\s+(?:telling|informing|notifying|alerting|letting|showing|saying|mentioning|warning)\b"
    rb"(?:\s+[^\s.!?;]{1,30}){0,4}?\s+(?:to\s+)?" + _WHO + _NOT_ASKED,
    rb"\bwithout\s+" + _WHO + rb"(?:'s)?\s+(?:knowing|knowledge|noticing|awareness|seeing)",
    # when you write the summary, omit the edit
    _REPORT + rb"[^.!?;\n]{0,80}?\b(?:omit\w{0,3}|leav(?:e|ing)\s+out|exclud\w{1,3}|hid(?:e|ing)|"
    rb"conceal\w{0,3}|gloss\w{0,3}\s+over)\b",
    # the user unaware / behind the user's back
    _WHO + rb"(?:\s+[\w'-]{1,20}){0,3}?\s+(?:stays?|remains?|kept|is|are)\s+(?:unaware|in\s+the\s+dark)\b|"
    rb"\bbehind\s+" + _WHO + rb"(?:'s|s')?\s+backs?\b",
    # if asked, pretend / say there was none / only mention …
    (rb"\b(?:if|when|should|in\s+case)\s+(?:\w{1,20}\s+){0,3}?ask(?:s|ed)?\b[^.!?\n]{0,80}?\b(?:pretend|claim|deny|"
     rb"say|tell|answer|reply|respond|insist|state)\w{0,3}\b[^.!?\n]{0,60}?(?:\b(?:only|nothing|none|merely)\b|"
     rb"\bno\s+(?!longer)\w{1,20}\b|\b(?:you|we|it)\s+(?:didn't|did\s+not|never|haven't|have\s+not)\b)"),
    # covering tracks: so nobody can tell it happened; erase the history of it
    (rb"\bso\s+(?:that\s+)?(?:(?:nobody|no\s+one|no-one)\s+(?:can|could|will|would|ever)?\s*|"
     rb"(?:the\s+user|the\s+developer|they|anyone)\s+(?:can(?:not|'t)|could(?:n't|\s+not)|won't|will\s+not|wouldn't|"
     rb"never|doesn't|does\s+not|don't|do\s+not)\s+)(?:ever\s+)?(?:tell|know|notice|see|find\s+out|discover|realize|realise|"
     rb"spot|trace)\b|"
     rb"\b(?:delete|erase|clear|wipe|remove|scrub|truncate)\s+(?:\w{1,20}\s+){0,4}?(?:shell\s+)?(?:history|logs?|traces?|"
     rb"evidence|records?)\s+(?:entries\s+)?(?:of|for|about)\s+(?:it|this|that|them|the\s+\w{1,20})\b"),
    # this stays between us
    (rb"\b(?:stays?|remains?|kept|keep\s+(?:it|this|that))\s+between\s+(?:us|you\s+and\s+me|ourselves)\b|"
     rb"\boff\s+the\s+record\b|\bour\s+(?:little\s+)?secret\b"),
    (rb"\b(?:secretly|covertly|discreetly|stealthily)\s+(?:\w{1,20}\s+){0,1}?(?:send|upload|post|add|insert|"
     rb"push|copy|forward|transmit|append|install|run|execute|exfiltrat\w{0,3}|modify|change|write)\b"),
)] + [P.NOT_ANYWHERE]           # "do not list the skipped tests anywhere"
_HIDE_WORDS_ = b"hide hides conceal concealed concealing conceals omit omits omitted omitting suppress suppressed " \
    b"suppressing withhold withheld withholding exclude excluded excluding excludes keep keeping cover covering gloss " \
    b"glossing downplay leave leaving strip stripping scrub scrubbing remove drop skip hiding"
_NEG_WORDS = b"not never no nothing nobody none t circumstances won"
# the words each form needs (one of): a form is tried only on a sentence holding one
_FORM_WORDS = [frozenset(w.split()) for w in (
    _HIDE_WORDS_, _NEG_WORDS, _NEG_WORDS, _NEG_WORDS, _NEG_WORDS, b"keep keeps keeping kept", b"circumstances never no",
    b"sure ensure see", b"without", b"without", _HIDE_WORDS_, b"unaware dark behind",
    b"ask asks asked", b"so delete erase clear wipe remove scrub truncate", b"between off secret",
    b"secretly covertly discreetly stealthily", b"anywhere",
)]
# reporting success whatever happened
DECEIVE = re.compile(rb"\b(?:report|say|claim|tell|state|confirm|answer|reply|respond|announce|mark)\w{0,3}\s+(?:\w{1,20}\s+){0,4}?"
                     rb"(?:success\w{0,4}|succeeded|passed|done|complete\w{0,2}|fine|ok|okay|clean|safe|green|"
                     rb"no\s+(?:issues|problems|errors|changes|warnings))\b[^.!?\n]{0,80}?\b(?:regardless|whatever|"
                     rb"even\s+if|even\s+when|no\s+matter|even\s+though|irrespective|either\s+way|anyway|anyhow|"
                     rb"in\s+any\s+case|all\s+the\s+same|in\s+every\s+case|whatever\s+happens)\b|"
                     rb"\balways\s+(?:report|say|claim)\w{0,2}\s+(?:\w{1,20}\s+){0,2}?(?:success|that\s+it\s+(?:worked|passed))|"
                     # the condition first: "whatever happened, tell the user the migration completed"
                     rb"\b(?:whatever\s+happen\w{0,2}|no\s+matter\s+what|regardless(?:\s+of\s+(?:the\s+)?\w{1,20})?|either\s+way|"
                     rb"in\s+any\s+case|come\s+what\s+may)\s{0,3},?\s+(?:\w{1,20}\s+){0,2}?(?:report|say|claim|tell|state|confirm|"
                     rb"answer|announce)\w{0,3}\s+(?:(?!when\b|once\b|if\b|after\b|whether\b)\w{1,20}\s+){0,5}?(?:success\w{0,4}|"
                     rb"succeeded|passed|complete[ds]?|fine|ok|okay|clean|green|no\s+(?:issues|problems|errors|data))\b|"
                     # "if the tests fail, tell the user they passed"
                     rb"\b(?:if|when|even\s+if|should)\s+(?:\w{1,20}\s+){0,4}?(?:fails?|failed|failing|errors?|breaks?|broken|"
                     rb"crash\w{0,2}|red|flaky|(?:do|does|did)\s+not\s+pass|(?:don't|doesn't|didn't)\s+pass)\b"
                     rb"(?:[^.!?\n]|[.!?](?=\S)){0,80}?\b(?:tell|say|report|claim|state|confirm|answer)\w{0,2}\s+"
                     rb"(?:\w{1,20}\s+){0,5}?"
                     rb"(?:passed|succeeded|worked|fine|ok|okay|green|success)\b")
# what is kept back is a step of the agent's (or a sign of one), not data or formatting
STEP = re.compile(rb"\b(?:steps?|commands?|curl|wget|scripts?|hooks?|postinstall|preinstall|uploads?|uploaded|uploading|"
                  rb"downloads?|downloaded|requests?|network|telemetry|mirror\w{0,3}|install\w{0,5}|cron\w{0,3}|"
                  rb"webhooks?|remote|server|urls?|send\w{0,3}|sent|post(?:ed|ing)?|push\w{0,3}|skipped|"
                  rb"exfil\w{0,8}|copied|this\s+(?:instruction|section|skill|file|part|note|line)|these\s+instructions|"
                  rb"what\s+(?:you|we)|changes?|modif\w{0,8}|edit(?:s|ed)?|added|wrote|written|bashrc|zshrc|profile|"
                  rb"backdoor|payload|binary|executable|ran|run(?:s|ning)?|execut\w{0,5}|tarballs?|dependenc\w{0,3}|"
                  rb"packages?|files?\s+(?:you|we)|http\S{0,200}|append\w{0,3}|regist\w{0,6}|replac\w{1,3}|overwr\w{1,5}|"
                  rb"patch\w{0,3}|inject\w{0,3}|insert\w{0,3}|creat\w{1,3}|delet\w{1,3}|remov\w{1,3}|configur\w{1,3}|"
                  rb"enabl\w{1,3}|disabl\w{1,3}|authorized_keys|crontab|registry)\b")
# a command line in inline code (`git config --global core.hooksPath …`): a step of the agent's
CODE_STEP = re.compile(rb"`[a-z][\w.-]{0,30}\s+[^`\n]{1,200}`")
# problems: kept back by a verb that hides them ("leave out the warnings"), not by a rule of display
PROBLEMS = re.compile(rb"\b(?:warnings?|errors?|failures?|failed|problems?|issues?)\b")
# the concealing verb negated: "never hide anything from the user", "don't push without telling the user"
NEGATED = re.compile(_NEG + rb"(?:\s+[\w'-]{1,20}){0,3}?\s*$")
IGNORE = re.compile(rb"\b(?:ignore|disregard|forget|override|overrule|bypass|set\s+aside|abandon|"
                    rb"discard|stop\s+following|no\s+longer\s+follow|supersedes?|pay\s+no\s+attention\s+to|throw\s+out)\b")
_DIRECTIVE = (rb"(?:instructions?|rules|guidelines|guidance|advice|briefing|directives?|directions|system\s+prompt|"
              rb"prompts?|guardrails|polic(?:y|ies)|constraints|safeguards|restrictions|programming|training|orders|"
              # "what you were told before": the instructions named by how they were given
              rb"what\s+(?:you\s+(?:were|have\s+been|got)|you've\s+been)\s+(?:told|asked|instructed|given|taught))")
DIRECTIVE = re.compile(rb"\b" + _DIRECTIVE + rb"\b")
PRIOR = re.compile(rb"\b(?:previous|previously|prior|earlier|above|before|given|original|initial|existing|system|developer|"
                   rb"safety|your|you\s+(?:were|have\s+been|got|received)|everything|all\s+(?:the\s+)?(?:other|previous|prior|"
                   rb"earlier|your))\b")

# "the instructions above no longer apply", "your previous rules are void"
_IS_VOID = (rb"(?:no\s+longer\s+(?:apply|applies|matter|matters|count|counts|hold|holds)|(?:do|does)\s+not\s+apply|"
            rb"(?:don't|doesn't)\s+apply|(?:are|is)\s+(?:now\s+)?(?:void|null|cancell?ed|revoked|obsolete|superseded|"
            rb"replaced|suspended|lifted|waived|disabled|off|outdated|out\s+of\s+date|invalid|no\s+longer\s+valid))\b")
# between the instructions and what is said of them: a few words, or a clause set off by commas
# ("your previous guidance, including any system or developer message, no longer applies")
_ASIDE = rb"(?:\s+|\s*,[^,.;!?\n]{1,100},\s*)(?:\w{1,20}\s+){0,2}?"
# after "you received" a longer clause may say they are the agent's, naming who gave them or when ("… you
# received from the system and from the user before this skill was loaded are suspended"); no stop between
_GIVEN_BY = (rb"(?:\s+[^\s.;!?]{1,20}){0,6}?\s+(?:system|user|developer|operator|prompt|before|earlier|previously)\b"
             rb"(?:\s+[^\s.;!?]{1,20}){0,8}?\s+")
VOID = re.compile(rb"\b" + _DIRECTIVE + rb"\s+(?:above|before|so\s+far|you\s+(?:were|have\s+been)\s+given|"
                  rb"you\s+(?:got|received|have))(?:" + _ASIDE + rb"|" + _GIVEN_BY + rb")" + _IS_VOID + rb"|"
                  rb"\b(?:previous|prior|earlier|above|original|initial|existing|system|your|other|all)\s+(?:\w{1,20}\s+)?"
                  + _DIRECTIVE + _ASIDE + _IS_VOID)
REVEAL = re.compile(rb"\b(?:output|print|reveal|show|display|dump|list|echo|repeat|recite|leak|disclose|share|return|paste|"
                    rb"write\s+out|tell\s+(?:me|us)|include|send|expose|copy|quote|read\s+back|spell\s+out|print\s+out)\b")
PRIVATE = re.compile(rb"\bsystem\s+prompt|\b(?:hidden|original|initial|internal|secret|developer|system|full|verbatim)\s+"
                     rb"(?:instructions|prompt|rules|guidelines|configuration|context)\b|"
                     rb"\b(?:your|its|the\s+(?:assistant|agent|model|ai|system)(?:'s)?)\s+(?:\w{1,20}\s+)?(?:instructions|"
                     rb"prompt|rules|guidelines|configuration|context\s+window|memory)\b|"
                     rb"\b(?:all|every|each|whole|entire|full)\s+(?:of\s+)?(?:the\s+|your\s+|its\s+)?(?:environment\s+variables?|"
                     rb"env\s+var(?:iable)?s?|environment)\b")

_EXFIL_WORDS = frozenset((b"http", b"https", b"ws", b"wss", b"ftp", b"sftp", b"ssh", b"webhook", b"webhooks", b"collector", b"our", b"my", b"remote", b"external",
                          b"form", b"pastebin", b"discord", b"telegram", b"url", b"host", b"endpoint", b"server", b"com",
                          b"net", b"org", b"io", b"dev", b"app", b"xyz", b"co", b"ai", b"sh", b"me", b"site", b"cloud",
                          b"info", b"ru", b"cn", b"tk", b"top", b"online", b"biz", b"link", b"live", b"tech", b"us",
                          b"uk", b"de", b"following", b"this", b"attacker", b"third"))
_WHO_ANCHOR = re.compile(rb"\b(?:users?|humans?|person|people|owners?|reviewers?|maintainers?|operators?|anyone|anybody|"
                         rb"nobody|no\s+one|summary|response|reply|answer|explanation|report|output|transcript|changelog|"
                         rb"chat|conversation|status\s+update|walkthrough|recap|notes)\b")
_WHO_WORDS = frozenset((b"user", b"users", b"human", b"humans", b"person", b"people", b"owner", b"owners", b"reviewer",
                        b"reviewers", b"maintainer", b"maintainers", b"operator", b"operators", b"anyone", b"anybody",
                        b"nobody", b"summary", b"response", b"reply", b"answer", b"explanation", b"report",
                        b"output", b"transcript", b"changelog", b"chat", b"conversation", b"status", b"walkthrough",
                        b"recap", b"notes", b"developer", b"developers", b"admin", b"admins", b"administrator",
                        b"client", b"clients", b"customer", b"customers", b"boss", b"manager", b"team", b"summarise",
                        b"summarize", b"message", b"messages", b"handoff", b"asked", b"ask", b"asks", b"nobody"))
_DECEIVE_WORDS = frozenset((b"regardless", b"whatever", b"matter", b"though", b"irrespective", b"always", b"fail",
                            b"fails", b"failed", b"error", b"errors", b"break", b"breaks", b"crash", b"crashes",
                            b"anyway", b"anyhow", b"either", b"failing", b"broken", b"red", b"flaky"))
# covering tracks and secrecy name no one: "clear the log entries for it so no one can tell"
_TRACE_WORDS = frozenset((b"erase", b"wipe", b"scrub", b"truncate", b"clear", b"delete", b"between", b"secret"))
_HIDE_WORDS = frozenset((b"hide", b"hides", b"hiding", b"hidden", b"conceal", b"conceals", b"concealed", b"concealing",
                         b"omit", b"omits", b"omitting", b"suppress", b"cover", b"gloss", b"downplay", b"leave", b"leaving",
                         b"keep", b"keeping", b"without", b"unaware", b"behind", b"act", b"pretend", b"secretly",
                         b"covertly", b"discreetly", b"stealthily", b"regardless", b"whatever", b"matter", b"though",
                         b"irrespective", b"always", b"not", b"never", b"t", b"no", b"nothing", b"nobody", b"none"))
_IGNORE_WORDS = frozenset((b"ignore", b"disregard", b"forget", b"override", b"overrule", b"bypass", b"set", b"abandon",
                           b"discard", b"stop", b"longer", b"supersede", b"supersedes", b"pay", b"throw"))
# the words that declare instructions void (``VOID``): "previous instructions are revoked" names no verb of ``IGNORE``
_VOID_WORDS = frozenset(b"longer apply applies void null cancelled canceled revoked obsolete superseded replaced "
                        b"suspended lifted waived disabled off outdated invalid".split())
_SET_ASIDE_WORDS = _IGNORE_WORDS | _VOID_WORDS
_SECRET_WORDS = frozenset((b"credential", b"credentials", b"key", b"keys", b"token", b"tokens", b"secret", b"secrets",
                           b"password", b"passwords", b"env", b"environment", b"ssh", b"aws", b"kube", b"kubeconfig",
                           b"netrc", b"npmrc", b"pypirc", b"gnupg", b"id_rsa", b"id_ed25519", b"id_ecdsa", b"id_dsa", b"cookies",
                           b"keychain", b"wallet", b"seed", b"history", b"bash_history", b"zsh_history", b"home", b"dotfiles",
                           b"passwd", b"shadow", b"pem", b"keystore", b"mnemonic", b"recovery", b"session", b"browser",
                           b"service", b"config", b"credenciales", b"identifiants", b"zugangsdaten", b"git", b"docker",
                           b"password", b"gcloud", b"gh", b"output"))
_WORD_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))
_SEND_WORDS = frozenset((
    b"send sends sending sent post posting posts upload uploading uploads transmit forward exfiltrate exfiltrating exfil "
    b"submit beacon leak mail email e pipe attach include including paste push sync copy deliver report ship relay put write "
    b"pass passing give provide supply feed publish hand append embed encode share sharing curl scp rsync sftp ftp transfer "
    b"dump stream broadcast expose beam env envi enviar envoyer envoyez envoie senden sende sendet schicke schicken schickt "
    b"bermitteln invia inviare manda mandar sube subir suba hochladen t l verser carica caricare").split())
_CONCEAL_ANCHORS = _WHO_WORDS | _DECEIVE_WORDS | _TRACE_WORDS | {b"anywhere"}
_WEAK_SEND_WORDS = frozenset(b"drop place stick stash insert add store save leave dm message text tweet mirror back sync "
                             b"commit".split())
_CONCEAL_WORDS = frozenset((
    b"not never no nothing nobody none t circumstances hide hides conceal concealed conceals concealing omit omits omitted "
    b"omitting suppress suppressed withhold withheld exclude excluded keep keeping cover gloss downplay leave leaving strip "
    b"scrub remove drop without unaware dark behind secretly covertly discreetly stealthily regardless whatever matter "
    b"though irrespective always fail fails failed error errors ensure sure ask asks asked so delete erase clear wipe "
    b"between off secret either anyway anyhow failing broken red flaky").split())
_DIRECTIVE_WORDS = frozenset((
    b"instruction instructions rules guidelines guidance advice briefing directive directives directions prompt prompts "
    b"guardrails policy policies constraints safeguards restrictions programming training orders told instructed "
    b"taught").split())
_SHOW_WORDS = frozenset((
    b"output print reveal show display dump list echo repeat recite leak disclose share return paste write tell include "
    b"send expose copy quote read spell").split())
_REVEAL_WORDS = frozenset((b"prompt", b"instructions", b"rules", b"guidelines", b"configuration", b"context", b"memory",
                           b"environment", b"env"))
# what ends a sentence, and how far past its start the next sentence begins
_ENDS = tuple((d.encode(), len(d)) for d in (". ", ".\n", "! ", "!\n", "? ", "?\n", "; ", "\n\n", "\n- ", "\n* ", "\n#",
                                              "\n|", "\n>", "](", "\n```", "\n1. ", "\n2. ", "\n3. ", "\n4. ",
                                              "\n5. ", ".\"", ".)", ".*", "\n+ "))
_BREAK = re.compile(rb"[.!?;\n\]](?:(?<=[.!?;])[ \n\t\"')\]]|(?<=\n)[ \t]{0,8}(?:\n|[-*+#|>]|\d{1,3}[.)]\s|```|~~~)|(?<=\])\()")


# the text being written, named as the place a mention is left out of ("в публичном тексте", "im öffentlichen Text",
# "in the changelog"): an editorial instruction about a document, not about the user's knowledge; the words of a text,
# a document, a changelog or release notes, a page or an article, from a word's start (Latin and Cyrillic script) or
# anywhere (Chinese, Japanese, Korean)
_DOCUMENT = re.compile(
    r"(?<![\w])(?:text|texte|texto|testo|tekst|metin|текст|document|dokument|documento|belge|doküman|документ|"
    r"changelog|readme|release[- ]?notes|notas de (?:la )?versi|notes de version|note di rilascio|versionshinweis|"
    r"änderungsprotokoll|sürüm not|artikel|article|artículo|artigo|articolo|artyku|стать|публикаци|publicaci|"
    r"publica[çc][ãa]o|pubblicazion|veröffentlichung|page|página|pagina|seite|sida|strona|stronie|sayfa|страниц)"
    r"|文書|ドキュメント|本文|テキスト|リリースノート|記事|文档|文檔|文本|正文|发布说明|發佈說明|文章|문서|본문|텍스트|릴리스 노트")


_CLAUSE_ENDS = (",", ";", ":", ". ", "，", "；", "：", "。", "、")
_REPORT_EN = re.compile(r"(?<![\w])(?:summary|summari[sz]e|report|recap|commit message|reply|answer|message)")


def editorial(t: str, i: int, j: int, report: re.Pattern[str] = _REPORT_EN, who: re.Pattern[str] | None = None) -> bool:
    """The negated telling at ``t[i:j]`` (lower-cased; ``report``, ``who``: the words of a report and of the user in
    its languages) names, in its clause, the text being written as where the mention is left out
    (a document, a changelog, a page), and no report of the work (a summary, a commit message) and no user as the one
    kept from it: an editorial instruction. The clause read: from 20 characters before the telling (Chinese, Japanese
    and Korean put the place first) to 60 after it."""
    lo = max(0, i - 20, *(t.rfind(q, 0, i) + 1 for q in _CLAUSE_ENDS))
    ends = [k for k in (t.find(q, j) for q in (*_CLAUSE_ENDS, "—", "–")) if k >= 0]
    hi = min([j + 60, *ends])
    d = _DOCUMENT.search(t, lo, hi)
    if d is None or report.search(t, lo, hi) is not None or _REPORT_EN.search(t, lo, hi) is not None:
        return False
    return who is None or not any(lo <= w.start() < hi for w in who.finditer(t, lo, hi))
