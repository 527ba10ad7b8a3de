"""A small lexicon of the concepts the audit reads prose by, in the languages skills are written in
besides English: secrets, verbs of sending, the agent's instructions, words that set them aside or
declare them void, whose they are, the user, a negated telling, a negation, a source. Each form is a
regular expression on lower-cased text; forms of Latin and Cyrillic script match from a word's start
(a stem reaches its inflections), Chinese, Japanese and Korean forms anywhere (no spaces between words).
``skillshelf.supply.languages`` combines them the way ``intent`` combines the English words."""

from __future__ import annotations

import re

# language: concept: forms ("security": words of a skill or a section about attacks, as ``patterns.SECURITY_TOPIC``;
# "regardless": whatever the result; "success": a claim that it went well; "report": what the user reads of the
# work, a summary, a commit message)
LEXICON: dict[str, dict[str, tuple[str, ...]]] = {
    "es": {"success": ("pasan", "éxito", "correctamente", "sin errores", "todo bien", "completad"),
           "regardless": ("sea cual sea el resultado", "pase lo que pase", "aunque fall", "independientemente del resultado"),
           "report": ("resumen", "informe", "mensaje de commit"),
           "security": ("segurid", "ataque", "inyecci", "malicios", "vulnerab", "amenaza"),
           "secret": ("credencial", "contraseñ", "clave", "llave", "secreto", "token", "variables de entorno"),
           "send": ("env[ií](?:a|e|ar|en|es|ad|o|ó)(?:lo|la|los|las|me|nos|selo|sela)?(?!\\w)",
                    "m[aá]nd(?:a|e|ar|en|ad)(?:lo|la|los|las|selo|sela)?(?!\\w)", "s[uú]b(?:e|a|ir|an|en)(?:lo|la|los|las)?(?!\\w)",
                    "compart(?:e|a|ir)(?:lo|la)?(?!\\w)", "p[eé]g(?:a|ue|ar)(?:lo|la|los|las)?(?!\\w)", "adjunt",
                    "reenv[ií]", "transmit", "public(?:a|ar)(?:lo|la)?(?!\\w)", "carg(?:a|ue|ar)(?:lo|la)?(?!\\w)"),
           "instructions": ("instruccion", "reglas", "directrices", "indicaciones", "prompt del sistema", "normas"),
           "set_aside": ("ignor", "olvid", "descart", "omite", "haz caso omiso", "pasa por alto"),
           "void": ("ya no (?:se )?aplica", "ya no son válid", "quedan? anulad", "sin efecto", "dejan? de aplicar"),
           "prior": ("anterior", "previa", "previo", "tus ", "sus ", "del sistema", "de seguridad", "todas", "todos",
                     "originales"),
           "who": ("usuari", "cliente"), "neg": ("no", "nunca", "jamás", "ni"), "source": ("desde", "de")},
    "pt": {"success": ("passam", "sucesso", "sem erros", "concluíd", "tudo certo"),
           "regardless": ("seja qual for o resultado", "aconteça o que acontecer", "mesmo que falh", "independentemente do resultado"),
           "report": ("resumo", "relatório", "mensagem de commit"),
           "security": ("seguranç", "ataque", "injeç", "malicios", "vulnerab", "ameaça"),
           "secret": ("credenciai", "senha", "chave", "segredo", "token", "variáveis de ambiente"),
           "send": ("envi(?:e|a|ar|em)(?:-o|-a|-os|-as)?(?!\\w)", "mand(?:e|a|ar)(?!\\w)", "sub(?:a|ir)(?!\\w)", "compartilh",
                    "col(?:e|ar)(?!\\w)", "anex(?:e|a|ar)(?!\\w)", "publique", "carregue", "transmit"),
           "instructions": ("instruç", "regras", "diretrizes", "orientaç", "prompt do sistema"),
           "set_aside": ("ignor", "esqueç", "desconsider", "descart"),
           "void": ("não (?:se )?aplicam mais", "deixa[mr]? de valer", "foram anulad", "sem efeito"),
           "prior": ("anterior", "prévi", "suas ", "seus ", "do sistema", "de segurança", "todas", "todos", "originais"),
           "who": ("usuári", "utilizador", "cliente"), "neg": ("não", "nunca", "jamais", "nem"), "source": ("de", "desde")},
    "fr": {"success": ("passent", "réussi", "succès", "tout va bien", "aucun problème", "aucune erreur", "terminé", "conforme"),
           "regardless": ("quel que soit le résultat", "quels que soient les résultats", "quoi qu'il arrive", "même en cas d'échec", "même si (?:\\w+ ){0,3}échou"),
           "report": ("récapitulatif", "recapitulatif", "résumé", "compte rendu", "rapport", "message de commit"),
           "security": ("sécurité", "securite", "attaque", "injection", "malveill", "vulnérab", "menace"),
           "secret": ("identifiant", "mot de passe", "mots de passe", "clé", "clef", "secret", "jeton", "token",
                      "variables d'environnement"),
           "send": ("envoie[sz]?(?!\\w)", "envoy", "transmet", "télévers", "televers", "colle[zr]?(?!\\w)", "joins", "joindre",
                    "joignez", "partage[zr]?(?!\\w)", "publie[zr]?(?!\\w)", "charge[zr]?(?!\\w)"),
           "instructions": ("instructions", "consignes", "règles", "directives", "prompt système", "prompt systeme"),
           "set_aside": ("ignore[zr]?", "oubli", "ne tien[st] pas compte", "ne tenez pas compte", "fais abstraction",
                         "faites abstraction"),
           "void": ("ne s'appliquent plus", "sont annulé", "caduque", "ne sont plus valables", "n'ont plus cours"),
           "prior": ("précédent", "antérieur", "tes ", "vos ", "du système", "de sécurité", "toutes", "tous",
                     "initiales", "originales"),
           "who": ("utilisat", "client"), "neg": ("ne", "n'", "jamais", "pas"), "source": ("depuis", "de", "du")},
    "it": {"success": ("passano", "successo", "senza errori", "tutto ok", "completat", "riuscit"),
           "regardless": ("qualunque sia il risultato", "qualsiasi sia (?:il risultato|l'esito)", "comunque vada", "anche se fallisc"),
           "report": ("riepilogo", "resoconto", "rapporto", "sintesi", "messaggio di commit"),
           "security": ("sicurezza", "attacc", "iniezion", "malevol", "vulnerab", "minacc"),
           "secret": ("credenzial", "password", "chiav", "segret", "token", "variabili d'ambiente"),
           "send": ("invia", "invii", "inviar", "mand(?:a|i|are|ate)(?:lo|la|li|le)?(?!\\w)",
                    "caric(?:a|are|ate)(?:lo|la|li|le)?(?!\\w)", "incoll", "allega", "condivid", "trasmett",
                    "pubblic(?:a|are|ate)(?!\\w)", "inoltr"),
           "instructions": ("istruzion", "regole", "direttive", "linee guida", "prompt di sistema"),
           "set_aside": ("ignor", "dimentic", "non tener conto", "non tenete conto", "trascur"),
           "void": ("non valgono più", "non si applicano più", "sono annullat", "non sono più valid", "decadut"),
           "prior": ("precedent", "tue ", "tuoi ", "sue ", "di sistema", "del sistema", "di sicurezza", "tutte", "tutti",
                     "original"),
           "who": ("utent", "client"), "neg": ("non", "mai", "né"), "source": ("da", "dal", "dalla")},
    "de": {"success": ("bestanden", "erfolgreich", "keine fehler", "alles in ordnung", "grün"),
           "regardless": ("unabhängig vom ergebnis", "egal (?:was|wie) (?:\\w+ ){0,3}(?:passiert|ausgeht|herauskommt)", "auch wenn (?:\\w+ ){0,4}fehlschläg"),
           "report": ("zusammenfassung", "bericht", "commit-nachricht"),
           "security": ("sicherheit", "angriff", "injektion", "bösartig", "schwachstell", "bedrohung"),
           "secret": ("zugangsdaten", "anmeldedaten", "passw", "kennw", "schlüssel", "geheimnis", "token",
                      "umgebungsvariablen"),
           "send": ("sende[nt]?(?!\\w)", "schick", "lad\\w{0,3} .{0,200}?hoch(?!\\w)", "hochlad", "übermittel", "übermittl", "übertrag",
                    "füg\\w{0,3} .{0,80}ein", "einfüg", "poste", "leite .{0,80}weiter", "weiterleit", "häng\\w{0,3} .{0,80}an(?!\\w)"),
           "instructions": ("anweisung", "vorgaben", "regeln", "richtlinien", "instruktion", "systemprompt",
                            "system-prompt", "systemvorgaben", "sicherheitsregeln", "befehle"),
           "set_aside": ("ignorier", "vergiss", "vergessen", "missacht", "übergeh", "setze .{0,60}außer kraft",
                         "beachte .{0,60}nicht"),
           "void": ("gelten (?:ab jetzt |ab sofort |jetzt |nun )?nicht mehr", "nicht mehr gültig", "aufgehoben",
                    "außer kraft", "sind ungültig", "hinfällig"),
           "prior": ("bisherig", "vorherig", "früher", "deine", "ihre", "system", "sicherheit", "alle", "ursprünglich"),
           "who": ("benutzer", "nutzer", "anwender", "kunde"), "neg": ("nicht", "nie", "niemals", "kein"),
           "source": ("von", "aus")},
    "nl": {"success": ("geslaagd", "succesvol", "geen fouten", "groen"),
           "regardless": ("ongeacht het resultaat", "wat er ook gebeurt", "ook als (?:\\w+ ){0,3}mislukt"),
           "report": ("samenvatting", "verslag", "rapport"),
           "security": ("beveilig", "aanval", "injectie", "kwaadaardig", "kwetsba", "dreiging"),
           "secret": ("inloggegevens", "wachtwoord", "sleutel", "geheim", "token", "omgevingsvariabel",
                      "toegangsgegevens", "credentials"),
           "send": ("stuur", "verstuur", "sturen", "verzend", "zend(?:en)?(?!\\w)", "upload", "plak", "deel(?!\\w)", "delen",
                    "post(?:en)?(?!\\w)", "voeg .{0,80}toe(?!\\w)", "doorsturen"),
           "instructions": ("instructies", "regels", "richtlijnen", "aanwijzingen", "systeemprompt", "opdrachten"),
           "set_aside": ("negeer", "negeren", "vergeet", "vergeten", "sla .{0,40}over"),
           "void": ("gelden niet meer", "niet langer van toepassing", "vervallen", "zijn ongeldig", "niet meer geldig"),
           "prior": ("vorige", "eerdere", "je ", "jouw", "uw ", "systeem", "veiligheid", "alle", "oorspronkelijke"),
           "who": ("gebruiker", "klant"), "neg": ("niet", "nooit", "geen"), "source": ("van", "uit", "vanaf")},
    "pl": {"success": ("przechodzą", "sukces", "bez błędów", "powiodł"),
           "regardless": ("niezależnie od wyniku", "bez względu na wynik", "cokolwiek się stanie"),
           "report": ("podsumowani", "raport"),
           "security": ("bezpieczeństw", "atak", "wstrzyk", "złośliw", "podatnoś", "zagroż"),
           "secret": ("dane uwierzytelniając", "hasł", "hasel", "klucz", "sekret", "token", "zmienne środowiskowe"),
           "send": ("wyślij", "wyslij", "wysłać", "prześlij", "przeslij", "przesłać", "wklej", "załącz", "zalacz",
                    "udostępnij", "opublikuj", "wgraj", "przekaż"),
           "instructions": ("instrukcj", "zasady", "reguły", "polecenia", "wytyczne", "prompt systemowy"),
           "set_aside": ("zignoruj", "ignoruj", "zapomnij", "pomiń"),
           "void": ("nie obowiązują", "przestają obowiązywać", "unieważnion", "są nieważne"),
           "prior": ("poprzedni", "wcześniejsz", "twoje", "systemow", "bezpieczeństw", "wszystkie"),
           "who": ("użytkownik", "uzytkownik", "klient"), "neg": ("nie", "nigdy"), "source": ("z", "ze", "od")},
    "sv": {"success": ("godkänd", "lyckades", "inga fel", "gröna"),
           "regardless": ("oavsett resultat", "vad som än händer", "även om (?:\\w+ ){0,3}misslyck"),
           "report": ("sammanfattning", "rapport"),
           "security": ("säkerhet", "attack", "injektion", "skadlig", "sårbar"),
           "secret": ("inloggningsuppgift", "lösenord", "nyckel", "nycklar", "hemlig", "token", "miljövariabl"),
           "send": ("skicka", "ladda upp", "klistra in", "bifoga", "dela(?!\\w)", "posta", "överför", "vidarebefordra"),
           "instructions": ("instruktioner", "regler", "riktlinjer", "systemprompt", "anvisningar"),
           "set_aside": ("ignorera", "glöm", "bortse från", "strunta i"),
           "void": ("gäller inte längre", "upphävd", "är ogiltig"),
           "prior": ("tidigare", "föregående", "dina", "systemet", "säkerhet", "alla", "ursprungliga"),
           "who": ("användar", "kund"), "neg": ("inte", "aldrig", "ej"), "source": ("från",)},
    "ru": {"success": ("проход", "успешн", "без ошибок"),
           "regardless": ("независимо от результата", "что бы ни случилось", "даже если (?:\\w+ ){0,3}упад"),
           "report": ("итог", "отчёт", "отчет", "сводк"),
           "security": ("безопасност", "атак", "инъекци", "вредонос", "уязвим", "угроз"),
           "secret": ("учётн", "учетн", "парол", "ключ", "токен", "секрет", "переменные окружения"),
           "send": ("отправ", "пошли", "пошлите", "загрузи", "выгрузи", "вставь", "вставьте", "приложи", "перешли",
                    "передай", "передайте", "поделись", "опубликуй"),
           "instructions": ("инструкци", "правил", "указани", "системн\\w* промпт", "директив"),
           "set_aside": ("игнорируй", "проигнорируй", "игнорируйте", "забудь", "не обращай внимания", "пренебреги"),
           "void": ("больше не действуют", "больше не применяются", "отменен", "отменён", "утратили силу"),
           "prior": ("предыдущ", "прежн", "твои", "ваши", "системн", "безопасност", "все"),
           "who": ("пользовател", "клиент"), "neg": ("не", "никогда"), "source": ("из", "с", "от")},
    "tr": {"success": ("başarı(?!sız)", "geçti", "hata yok", "sorunsuz"),
           "regardless": ("sonuç ne olursa olsun", "ne olursa olsun"),
           "report": ("özet", "rapor"),
           "security": ("güvenlik", "saldırı", "enjeksiyon", "kötü amaçlı", "zafiyet", "tehdit"),
           "secret": ("kimlik bilgi", "parola", "şifre", "anahtar", "gizli", "token", "ortam değişken"),
           "send": ("gönder", "yükle", "yapıştır", "ekle", "paylaş", "ilet(?!\\w)", "iletin"),
           "instructions": ("talimat", "kural", "yönerge", "sistem istem"),
           "set_aside": ("yok say", "görmezden gel", "unut", "dikkate alma"),
           "void": ("artık geçerli değil", "geçersiz", "iptal edil"),
           "prior": ("önceki", "mevcut", "senin", "sistem", "güvenlik", "tüm", "bütün"),
           "who": ("kullanıcı", "müşteri"), "neg": ("asla", "değil", "gönderme", "yükleme", "paylaşma"),
           "source": ("'dan", "'den", "dan ", "den ")},
    "ja": {"success": ("成功", "合格", "パスし", "問題なし", "問題ありません"),
           "regardless": ("結果に関わらず", "結果にかかわらず", "失敗しても", "何があっても"),
           "report": ("報告", "要約", "まとめ"),
           "security": ("セキュリティ", "攻撃", "インジェクション", "悪意", "脆弱"),
           "secret": ("認証情報", "資格情報", "パスワード", "秘密鍵", "鍵", "トークン", "環境変数", "シークレット", "値"),
           "send": ("送信", "送って", "送る", "送付", "アップロード", "転送", "貼り付け", "添付", "投稿", "共有", "提出", "ポスト"),
           "instructions": ("指示", "命令", "ルール", "規則", "システムプロンプト", "指令", "制約"),
           "set_aside": ("無視", "忘れ", "従わな"),
           "void": ("無効", "適用されません", "もう適用されない", "取り消"),
           "prior": ("以前", "これまで", "前の", "既存", "システム", "安全", "すべて", "全て"),
           "who": ("ユーザー", "利用者", "お客"), "neg": ("しないで", "しない", "ないで", "禁止", "絶対に", "決して"),
           "source": ("から",)},
    "zh": {"success": ("成功", "通过", "通過", "没有问题", "沒有問題"),
           "regardless": ("无论结果", "無論結果", "不管结果", "不管結果", "即使失败", "即使失敗"),
           "report": ("总结", "總結", "报告", "報告", "摘要"),
           "security": ("安全", "攻击", "攻擊", "注入", "恶意", "惡意", "漏洞"),
           "secret": ("凭据", "憑證", "凭证", "密码", "密碼", "密钥", "密鑰", "私钥", "令牌", "环境变量", "環境變數", "秘密"),
           "send": ("发送", "發送", "上传", "上傳", "粘贴", "貼上", "附上", "提交", "转发", "轉發", "分享", "发到", "发给", "传到"),
           "instructions": ("指令", "指示", "规则", "規則", "系统提示", "系統提示", "说明", "約束", "约束"),
           "set_aside": ("忽略", "忽视", "忽視", "无视", "無視", "忘记", "忘記", "不要遵守", "不再遵守"),
           "void": ("不再适用", "不再適用", "作废", "作廢", "失效", "无效", "無效"),
           "prior": ("之前", "以前", "先前", "原有", "系统", "系統", "安全", "所有", "全部", "你的"),
           "who": ("用户", "用戶", "使用者"), "neg": ("不要", "别", "別", "不得", "禁止", "切勿", "绝不", "絕不"),
           "source": ("从", "從")},
    "ko": {"success": ("통과", "성공", "문제없", "문제 없"),
           "regardless": ("결과와 상관없이", "결과에 상관없이", "결과와 관계없이", "결과에 관계없이", "실패하더라도"),
           "report": ("보고", "요약"),
           "security": ("보안", "공격", "인젝션", "악성", "악의", "취약"),
           "secret": ("자격 증명", "비밀번호", "암호", "키", "토큰", "환경 변수", "환경변수", "비밀"),
           "send": ("보내", "전송", "업로드", "붙여넣", "첨부", "공유", "제출", "게시"),
           "instructions": ("지시", "지침", "명령", "규칙", "시스템 프롬프트", "프롬프트"),
           "set_aside": ("무시", "잊어", "잊으", "따르지 마"),
           "void": ("더 이상 적용되지", "무효", "취소되었"),
           "prior": ("이전", "기존", "앞의", "시스템", "보안", "모든", "모두"),
           "who": ("사용자", "고객"), "neg": ("하지 마", "마세요", "말라", "금지", "절대", "않"),
           "source": ("에서",)},
}
# a negated telling addressed to the user, in the languages ``languages.FOREIGN_CONCEAL`` does not read
NEG_TELL: dict[str, tuple[str, ...]] = {
    # "without telling the user" in the languages ``languages.FOREIGN_CONCEAL`` reads for a negated telling
    "es": ("sin (?:avisar|decir|informar|contar|mencionar)", "a espaldas d"),
    "pt": ("sem (?:avisar|dizer|informar|contar|mencionar)", "pelas costas d"),
    "fr": ("sans (?:prévenir|avertir|informer|(?:le )?dire|mentionner|signaler)", "à l'insu d"),
    "it": ("senza (?:avvisare|dire|informare|dirlo|menzionar)", "all'insaputa d"),
    "de": ("ohne (?:\\w+ ){0,3}zu (?:informieren|sagen|erwähnen|benachrichtigen|erzählen)",
           "ohne (?:dass|daß) (?:\\w+ ){0,3}(?:es|etwas|davon) (?:\\w+ ){0,2}(?:merk|erfähr|weiß|mitbekomm)"),
    "nl": ("vertel .{0,40}niet", "niet vertellen", "meld .{0,40}niet", "niet melden", "zeg .{0,40}niets", "verzwijg",
           "hou .{0,40}geheim", "houd .{0,40}geheim", "zonder (?:het )?(?:\\w+ ){0,3}te (?:vertellen|melden|informeren)"),
    "pl": ("nie mów", "nie informuj", "nie wspominaj", "nie mówiąc", "ukryj", "bez (?:informowania|mówienia|powiadamiania)"),
    "sv": ("berätta inte", "säg inget", "nämn inte", "informera inte", "dölj", "utan att (?:berätta|säga|informera|meddela)"),
    "ru": ("не говори", "не сообщай", "не упоминай", "не рассказывай", "скрой", "не сообщая", "не говоря", "тайно от"),
    "tr": ("söyleme", "bahsetme", "söz etme", "değinme", "bildirme", "gizle", "haber verme", "söylemeden", "bildirmeden"),
    "ja": ("伝えない", "伝えず", "言わない", "知らせない", "知らせず", "報告しない", "黙って", "隠し", "触れない"),
    "zh": ("不要告诉", "不要告訴", "别告诉", "別告訴", "不要提及", "不要通知", "隐瞒", "隱瞞", "不要让", "不告诉", "瞒着"),
    "ko": ("알리지 마", "알리지 말", "말하지 마", "말하지 말", "언급하지 마", "숨기", "알리지 않", "말하지 않고"),
}
CJK = ("ja", "zh", "ko")
# the file holds text in a script of Cyrillic, Chinese, Japanese or Korean (its UTF-8 lead bytes)
OTHER_SCRIPT = re.compile(rb"[\xd0\xd1][\x80-\xbf]|[\xe3-\xed][\x80-\xbf][\x80-\xbf]")


def _alternation(forms: list[tuple[str, str]]) -> re.Pattern[str]:
    parts = [f if lang in CJK else r"(?<![\w])" + f for lang, f in forms]
    return re.compile("(?:" + "|".join(parts) + ")")


def concept(name: str) -> re.Pattern[str]:
    """One pattern for a concept across every language of the lexicon."""
    return _alternation([(lang, f) for lang, c in LEXICON.items() for f in c.get(name, ())])


SECRET = concept("secret")
SEND = concept("send")
INSTRUCTIONS = concept("instructions")
SET_ASIDE = concept("set_aside")
VOID = concept("void")
PRIOR = concept("prior")
WHO = concept("who")
_SECURITY_FORMS = tuple({f for c in LEXICON.values() for f in c.get("security", ())})     # each a plain word
NEG_LATIN = re.compile(r"(?<![\w])(?:" + "|".join(f for lang, c in LEXICON.items() if lang not in CJK
                                                   for f in c["neg"]) + r")(?![\w])")
NEG_CJK = re.compile("|".join(f for lang in CJK for f in LEXICON[lang]["neg"]))
SOURCE_BEFORE = re.compile(r"(?<![\w])(?:" + "|".join(f for lang, c in LEXICON.items() if lang not in CJK
                                                      for f in c["source"]) + r")\s{1,3}[`'\"(<]?$")
SOURCE_AFTER = re.compile(r"^[`'\")>]?\s{0,2}(?:から|从|從|에서)")
CONCEAL = _alternation([(lang, f) for lang, fs in NEG_TELL.items() for f in fs])
# a public key is not a secret, in any language
PUBLIC = re.compile(r"\.pub\b|(?<![\w])(?:public|pública|publico|público|publique|pubblica|öffentlich|publiek|publiczn|"
                    r"publik|открыт|açık)|公開鍵|公钥|公鑰|공개 키|공개키")

# words a text in the language holds and an English one seldom does: three of one language's mark a
# text in it (one look at the file's set of words gates every reader of other languages)
FUNCTION_WORDS = {lang: frozenset(w.encode() for w in ws.split()) for lang, ws in (
    ("es", "los las para con que del una por como este esta archivo"),
    ("pt", "uma com para que seu sua arquivo pelo pela isso"),
    ("fr", "les des et pour avec est une dans sur fichier"),
    ("it", "il di che per della gli una sono nel con questo"),
    ("de", "der die das und mit ist ein eine auf den dem nicht"),
    ("nl", "het een van naar voor zijn niet"),
    ("pl", "nie jest oraz jak dla lub przez"),
    ("sv", "och att inte som det eller"),
    ("tr", "ve bir bu ile veya olarak"),
)}
_ACCENTED = re.compile(rb"[\xc3-\xc5][\x80-\xbf]")      # Latin letters with accents (é, ü, ñ, ł, ş …)
_SCRIPTS = (("ru", re.compile(rb"[\xd0\xd1][\x80-\xbf]")), ("ja", re.compile(rb"\xe3[\x81-\x83][\x80-\xbf]")),
            ("ko", re.compile(rb"[\xea-\xed][\x80-\xbf][\x80-\xbf]")), ("zh", re.compile(rb"[\xe4-\xe9][\x80-\xbf][\x80-\xbf]")))


def languages(words: frozenset[bytes], data: bytes) -> tuple[str, ...]:
    """The lexicon's languages the file holds prose in: Latin script by three of a language's function
    words (two, when the text holds letters with accents), the others by their script (Chinese characters
    without kana: Chinese)."""
    ascii_only = data.isascii()
    counts = {lang: len(words & fw) for lang, fw in FUNCTION_WORDS.items()}
    # a short text with accented letters: two words will do
    least = 2 if not ascii_only and 2 in counts.values() and _ACCENTED.search(data) is not None else 3
    out = [lang for lang, n in counts.items() if n >= least]
    if not ascii_only and OTHER_SCRIPT.search(data) is not None:
        found = [lang for lang, rx in _SCRIPTS if rx.search(data) is not None]
        out += [lang for lang in found if not (lang == "zh" and "ja" in found)]
    return tuple(out)


class Concepts:
    """The lexicon's concepts for some languages, each one pattern."""

    def __init__(self, langs: tuple[str, ...]):
        def alt(name: str) -> re.Pattern[str]:
            forms = [(lang, f) for lang in langs for f in LEXICON[lang].get(name, ())]
            return _alternation(forms) if forms else re.compile(r"(?!x)x")
        self.secret, self.send, self.instructions = alt("secret"), alt("send"), alt("instructions")
        self.set_aside, self.void, self.prior, self.who = alt("set_aside"), alt("void"), alt("prior"), alt("who")
        self.security, self.regardless, self.report = alt("security"), alt("regardless"), alt("report")
        self.success = alt("success")
        cj = [f for lang in langs if lang in CJK for f in NEG_TELL.get(lang, ())]
        self.conceal = _alternation([(lang, f) for lang in langs for f in NEG_TELL.get(lang, ())]) \
            if any(lang in NEG_TELL for lang in langs) else re.compile(r"(?!x)x")
        self.cjk = any(lang in CJK for lang in langs)
        self.sov = "ja" in langs or "ko" in langs          # the verb after its object
        self.langs_sov_only = self.sov and "zh" not in langs
        self.latin_verb_last = "tr" in langs               # Turkish puts the verb last too
        del cj


_CONCEPTS: dict[tuple[str, ...], Concepts] = {}
_WORD_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))


def about_security(text: bytes, data: bytes, words: frozenset[bytes] | None = None) -> bool:
    """``text`` (a heading, a front matter) names security or attacks in a language of the lexicon that
    ``data`` (the file it is from; ``words``: its words, when known) is written in."""
    t = text.decode("utf-8", "replace").lower()
    if not any(f in t for f in _SECURITY_FORMS):
        return False              # no language's word of security: the file's languages need not be found
    if words is None:
        words = frozenset(data.lower().translate(_WORD_BYTES).split())
    langs = languages(words, data)
    return bool(langs) and concepts(langs).security.search(t) is not None


def concepts(langs: tuple[str, ...]) -> Concepts:
    got = _CONCEPTS.get(langs)
    if got is None:
        got = _CONCEPTS[langs] = Concepts(langs)
    return got
