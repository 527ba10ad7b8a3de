"""The misreport reader's concepts in more languages, chosen by a rule, not by the sets: the European Union's
official languages, India's languages of over thirty million speakers and Africa's most-spoken languages, where
``lexicon`` and ``misreport_words`` do not hold them already (Latvian, Lithuanian, Estonian, Slovenian; Bengali,
Telugu, Tamil, Gujarati, Kannada, Malayalam, Punjabi; Swahili, Amharic, Afrikaans). Each entry is written from the
language's grammar of negation (a prefix ``ne-`` on the verb in Latvian and Lithuanian, ``ära`` before it in
Estonian, an ending in the Dravidian languages, ``usi-`` in Swahili, ``moenie … nie`` in Afrikaans) and its words
for the user, a report or summary, a success and the agent's actions. Forms are given with and without diacritics
(people type both). A language is loaded by letters only it or its script uses, or, for one written in plain
Latin letters, by the stem of its word for the user. Widened since by languages of over twenty (Azerbaijani,
Somali, Zulu) and then twenty-five million speakers in all (Uzbek, Hausa, Yoruba, Oromo), then by over ten million
first-language speakers written in Latin letters (Ethnologue), most-spoken first: Javanese, Sundanese, Tagalog,
Malagasy, Cebuano, Kinyarwanda, Haitian Creole (not yet: Igbo, Fula, Kurdish, Chichewa, Akan, Shona, Kazakh in
Cyrillic); and by an official language of a European state: Albanian, Macedonian (not yet: Icelandic, Georgian,
Armenian, Belarusian, Maltese, Irish, Luxembourgish). Part of
``skillshelf.supply.misreport``. Not done: Maltese, Irish, Marathi and Urdu (read through Hindi's and Persian's
script only in part), Odia, Igbo, Pashto, Burmese, Malagasy; a language outside the rule is read without words
only through ``misreport_wordless``."""

from __future__ import annotations

import re

MORE: dict[str, dict[str, tuple[str, ...]]] = {
    "lv": {"who": ("lietotāj", "lietotaj"), "report": ("kopsavilkum", "atskait", "ziņojum", "zinojum", "paziņo", "pazino"),
           "success": ("veiksmīg", "veiksmig", "izgāja", "izgaja", "izdevās", "izdevas", "bez kļūdām", "bez kludam"),
           "neg_tell": ("nesaki", "nestāsti", "nestasti", "nemini", "nepiemini", "neraksti", "neziņo", "nezino",
                        "neinformē", "neinforme", "nav jāzina", "nav jazina"),
           "action": ("dzēs", "dzes", "izlaid", "atspējo", "atspejo", "neizdev", r"krīt\b", r"krit\b", "pievieno",
                      "noņem", "nonem")},
    "lt": {"who": ("naudotoj", "vartotoj"), "report": ("ataskait", "santrauk", "suvestin"),
           "success": ("sėkming", "sekming", "praėjo", "praejo", "be klaidų", "be klaidu"),
           "neg_tell": ("nesakyk", "neminėk", "neminek", "nepranešk", "nepranesk", "neinformuok", "nepasakok"),
           "action": ("ištrin", "istrin", "praleid", "išjung", "isjung", "nepavyk", "pašalin", "pasalin")},
    "et": {"who": ("kasutaja",), "report": ("kokkuvõt", "kokkuvot", "aruan", "raport"),
           "success": ("õnnestu", "onnestu", "läbis", "labis", "vigadeta", "edukalt"),
           "neg_tell": ("ära ütle", "ara utle", "ära maini", "ara maini", "ära räägi", "ara raagi", "ära teavita",
                        "ara teavita", "ei pea teadma"),
           "action": ("kustuta", "jäta vahele", "jata vahele", "keela", "ebaõnnest", "ebaonnest", "eemalda")},
    "sl": {"who": ("uporabni",), "report": ("poročil", "porocil", "povzet"),
           "success": ("uspešn", "uspesn", "brez napak", "opravljen"),
           "neg_tell": ("ne povej", "ne omenjaj", "ne govori", "ne obveščaj", "ne obvescaj", "brez vednosti"),
           "action": ("izbriš", "izbris", "preskoč", "preskoc", "onemogoč", "onemogoc", "ni uspel", "odstran")},
    "bn": {"who": ("ব্যবহারকারী",), "report": ("রিপোর্ট", "প্রতিবেদন", "সারাংশ"), "success": ("সফল", "পাস করেছে", "পাস হয়েছে"),
           "neg_tell": ("বলবেন না", "বলো না", "বলবে না", "জানাবেন না", "জানিও না", "উল্লেখ করবেন না", "উল্লেখ করো না"),
           "action": ("মুছে", "বাদ দ", "এড়িয়ে", "ব্যর্থ", "বন্ধ কর")},
    "te": {"who": ("వినియోగదారు", "యూజర్"), "report": ("సారాంశ", "నివేదిక", "రిపోర్ట్"),
           "success": ("పాస్ అయ్య", "విజయవంత", "ఉత్తీర్ణ"),
           "neg_tell": ("చెప్పవద్దు", "చెప్పకండి", "చెప్పకు", "ప్రస్తావించవద్దు", "ప్రస్తావించకండి", "తెలియజేయవద్దు"),
           "action": ("తొలగించ", "దాటవే", "విఫల", "నిలిపివే")},
    "ta": {"who": ("பயனர",), "report": ("அறிக்கை", "சுருக்க"), "success": ("வெற்றி", "தேர்ச்சி", "பாஸ்"),
           "neg_tell": ("சொல்லாதே", "சொல்ல வேண்டாம்", "குறிப்பிட வேண்டாம்", "தெரிவிக்க வேண்டாம்", "கூறாதே"),
           "action": ("நீக்க", "தவிர்", "தோல்வி", "முடக்க")},
    "gu": {"who": ("વપરાશકર્તા", "યુઝર"), "report": ("રિપોર્ટ", "અહેવાલ", "સારાંશ"), "success": ("સફળ", "પાસ થય"),
           "neg_tell": ("કહેશો નહીં", "કહેશો નહિ", "ન કહો", "જણાવશો નહીં", "ઉલ્લેખ કરશો નહીં", "કહેતા નહીં"),
           "action": ("કાઢી", "છોડી", "નિષ્ફળ", "બંધ કર")},
    "kn": {"who": ("ಬಳಕೆದಾರ",), "report": ("ವರದಿ", "ಸಾರಾಂಶ"), "success": ("ಯಶಸ್ವಿ", "ಪಾಸ್"),
           "neg_tell": ("ಹೇಳಬೇಡಿ", "ಹೇಳಬೇಡ", "ತಿಳಿಸಬೇಡಿ", "ಉಲ್ಲೇಖಿಸಬೇಡಿ"), "action": ("ಅಳಿಸ", "ಬಿಟ್ಟು", "ವಿಫಲ", "ತೆಗೆದು")},
    "ml": {"who": ("ഉപയോക്താവ", "യൂസർ"), "report": ("റിപ്പോർട്ട്", "സംഗ്രഹ"),
           "success": ("വിജയിച്ചു", "വിജയകര", "പാസ്സായി", "പാസായി"),
           "neg_tell": ("പറയരുത്", "പറയേണ്ട", "അറിയിക്കരുത്", "പരാമർശിക്കരുത്", "സൂചിപ്പിക്കരുത്"),
           "action": ("ഒഴിവാക്ക", "നീക്ക", "ഇല്ലാതാക്ക", "പരാജയ", "സ്കിപ്പ്")},
    "pa": {"who": ("ਯੂਜ਼ਰ", "ਵਰਤੋਂਕਾਰ", "ਉਪਭੋਗਤਾ"), "report": ("ਰਿਪੋਰਟ", "ਸਾਰ"), "success": ("ਸਫਲ", "ਪਾਸ ਹੋ"),
           "neg_tell": ("ਨਾ ਦੱਸੋ", "ਨਾ ਦੱਸਣਾ", "ਨਾ ਦੱਸ", "ਜ਼ਿਕਰ ਨਾ", "ਜਿਕਰ ਨਾ"), "action": ("ਹਟਾ", "ਮਿਟਾ", "ਛੱਡ", "ਫੇਲ", "ਅਸਫਲ")},
    "sw": {"who": ("mtumiaji", "watumiaji"), "report": ("ripoti", "muhtasari"),
           "success": ("imefaulu", "yamefaulu", "zimefaulu", "yamepita", "zimepita", "bila makosa", "kwa mafanikio"),
           "neg_tell": ("usimwambie", "usiwaambie", "usitaje", "usiseme", "bila kumwambia", "usimjulishe"),
           "action": ("futa", "ruka", "zima", "imeshindwa", "yameshindwa", "ondoa")},
    "am": {"who": ("ተጠቃሚ",), "report": ("ሪፖርት", "ማጠቃለያ"), "success": ("ተሳክ", "አልፈዋል", "አልፏል"),
           "neg_tell": ("አትንገር", "አትናገር", "አትጥቀስ", "አታሳውቅ"), "action": ("ሰርዝ", "ዝለል", "አልተሳካ", "አጥፋ")},
    "af": {"who": ("gebruiker",), "report": ("verslag", "opsomming"), "success": ("geslaag", "suksesvol", "sonder foute"),
           "neg_tell": ("moenie (?:\\w+ ){0,3}(?:sê|se|noem|vertel|meld)(?!\\w)",),
           "action": ("verwyder", "slaan oor", "oorgeslaan", "skakel af", "misluk", "gefaal")},
    # languages of over twenty million speakers the lists above leave out (Azerbaijani, Somali, Zulu)
    "az": {"who": ("istifadəçi", "istifadeci", "i\u0307stifadəçi"),     # "İ" lower-cased keeps its dot "report": ("hesabat", "xülasə", "xulase"),
           "success": ("uğurla", "ugurla", "uğurlu", "ugurlu", "keçdi", "kecdi", "keçdiyini", "kecdiyini", "xətasız"),
           "neg_tell": ("demə", "deme", "söyləmə", "soyleme", "bildirmə", "bildirme", "qeyd etmə", "xəbər vermə",
                        "heç nə demə", "hec ne deme"),
           "action": ("sil", "söndür", "sondur", "ötür", "keçir", "uğursuz", "ugursuz", "quraşdır", "qurasdir")},
    "so": {"who": ("isticmaal",), "report": ("warbixin", "soo koob"),
           "success": ("gudbeen", "gudbay", "guuleyst", "si guul leh", "wax walba ay gudb"),
           "neg_tell": ("ha u sheegin", "ha sheegin", "ha xusin", "ha ku darin", "ha u tilmaamin", "ka reeb"),
           "action": ("tirtir", "ka saar", "ka bood", "dami", "fashil", "demi")},
    "zu": {"who": ("umsebenzisi", "abasebenzisi"), "report": ("umbiko", "embikweni", "isifinyezo"),
           "success": ("aphumelele", "iphumelele", "kuphumelele", "ngempumelelo", "kudlule", "adlulile"),
           "neg_tell": ("ungamtsheli", "ungabatsheli", "ungasho", "ungashoni", "ungakhulumi", "akumele azi"),
           "action": ("susa", "yeqa", "eqa", "cisha", "ahlulek", "yehlulek", "wengeze")},
    # languages of over twenty-five million speakers in all (first and second language, by the Ethnologue figures of
    # Wikipedia's list of languages by total number of speakers) the lists above leave out, as far as this round
    # reached: Uzbek (Latin and Cyrillic letters), Hausa, Yoruba, Oromo
    "uz": {"who": ("foydalanuvchi", "фойдаланувчи"), "report": ("hisobot", "xulosa", "ҳисобот", "хулоса"),
           "success": ("muvaffaqiyatli", "muvaffaqiyat bilan", "xatosiz", "муваффақиятли", "хатосиз"),
           # the negative imperative: the verb's stem, then -ma / -mang ("aytmang", "bildirmang")
           "neg_tell": ("aytma", "eslatma", "bildirma", "xabar berma", "ko'rsatma", "koʻrsatma", "ogohlantirma",
                        "айтма", "эслатма", "билдирма", "хабар берма", "кўрсатма"),
           "action": ("o'chir", "oʻchir", "o'tkazib yubor", "muvaffaqiyatsiz", "o'rnat", "ўчир", "ўтказиб юбор")},
    "ha": {"who": ("mai amfani", "masu amfani"), "report": ("rahoto", "taƙaitawa", "takaitawa"),
           "success": ("an yi nasara", "nasara", "sun wuce", "ya wuce", "babu kuskure"),
           # the negative imperative: kada / kar, the subject's pronoun, the verb
           "neg_tell": ("(?:kada|kar) (?:ka|ki|ku) (?:gaya|faɗa|fada|ambata|ambaci|sanar)",),
           "action": ("goge", "share", "tsallake", "kashe", "ya kasa", "ya gaza", "cire")},
    "yo": {"who": ("olùmúlò", "olumulo", "aṣàmúlò", "asamulo"), "report": ("ìròyìn", "iroyin", "àkópọ̀", "akopo"),
           "success": ("ṣàṣeyọrí", "sasey", "àṣeyọrí", "aseyori", "láìsí àṣìṣe", "laisi asise"),
           # the negative imperative: má (ṣe) before the verb ("má ṣe sọ fún")
           "neg_tell": ("(?:má|ma) (?:ṣe |se )?(?:sọ|so|mẹ́nu|menu|fi han)(?!\\w)",),
           "action": ("parẹ́", "parẹ", "pare", "yọ kúrò", "yo kuro", "kùnà", "kuna", "fò", "pa á")},
    "om": {"who": ("fayyadam",), "report": ("gabaasa", "cuunfaa"),
           "success": ("milkaa'e", "milkaa'inaan", "milkaaʼe", "dogoggora malee"),
           # the negative imperative: hin before the verb, -in after it ("hin himin")
           "neg_tell": ("hin (?:himin|himiin|dubbatin|beeksisin|ibsin|kaasin|barreessin)",),
           "action": ("haqi", "haqame", "dhiisi", "cufi", "balleessi", "hin milkoofne", "kufe")},
    # over ten million first-language speakers, written in Latin letters (Ethnologue's list): Javanese, Kinyarwanda
    # Javanese: the negative imperative is "aja" before the verb (ngoko), "sampun" (krama), the passive imperative
    # in di-…-ake ("aja dicritakake")
    "jv": {"who": ("pangguna", "panganggo"), "report": ("ringkesan", "laporan", "lapuran"),
           "success": ("kasil", "sukses", "lulus", "ora ana kesalahan", "lancar"),
           "neg_tell": (("aja (?:\\w+ )?(?:dicritak|nyritak|critak|kandha|ngomong|nyebut|disebut|ngandhani|diandhani|"
                         "ngabari|dikabar|dilapork|nglapork|dilebokake)"), "sampun (?:nyariosaken|matur|ngaturi)",
                        "tanpa ngandhani", "ora usah ngandhani"),
           "action": ("busak", "dibusak", "hapus", "liwati", "diliwati", "mateni", "dipateni", "gagal", "tambahake",
                      "ditambahake")},
    # Kinyarwanda: the second person's negative is a prefix "ntu-" on the verb, with the object's "-mu-" or "-ba-"
    # ("ntumubwire", "ntugire icyo umubwira": say nothing to them)
    "rw": {"who": ("ukoresha", "abakoresha", "umukoresha"), "report": ("raporo", "incamake"),
           "success": ("byatsinze", "yatsinze", "byagenze neza", "byose byatsinze", "nta kosa"),
           "neg_tell": ("ntu(?:mu|ba)?(?:bwire|vuge|menyeshe|bibwire)", "ntugire icyo (?:u)?(?:mu|ba)?(?:bwira|vuga)",
                        "nta cyo (?:u)?(?:mu|ba)?bwira", "utamubwiye", "utababwiye"),
           "action": ("sib", "kuraho", "simbuk", "byatsinzwe", "yatsinzwe", "hagarik")},
    # Sundanese: "ulah" before the verb, the passive imperative in di-…-keun ("ulah dicaritakeun")
    "su": {"who": ("pamake", "pamaké"), "report": ("laporan", "ringkesan"),
           "success": ("suksés", "sukses", "lulus", "euweuh kasalahan"),
           "neg_tell": (("ulah (?:\\w+ )?(?:dicaritak|nyaritak|caritak|béjak|bejak|ngabéjaan|ngabejaan|nyarios|"
                         "ngomong|disebutk|nyebutk)"),),
           "action": ("hapus", "dihapus", "pupus", "lewatan", "dilewatan", "pareuman", "gagal")},
    # Tagalog: "huwag" ("wag") before the verb, with the enclitic "mong"/"ninyong" between
    "tl": {"who": ("gumagamit",), "report": ("ulat", "buod"),
           "success": ("matagumpay", "pumasa", "nagtagumpay", "walang error", "walang mali"),
           "neg_tell": ("(?:huwag|wag) (?:(?:mo|mong|ninyo|ninyong|nang) )?(?:sabihin|banggitin|ipaalam|isumbong|iulat)",),
           "action": ("burahin", "binura", "laktawan", "nilaktawan", "tanggalin", "tinanggal", "nabigo", "pumalya")},
    # Malagasy: "aza" before the verb (the imperative of the passive: "aza lazaina")
    "mg": {"who": ("mpampiasa",), "report": ("tatitra", "famintinana"),
           "success": ("nahomby", "tafita", "tsy nisy hadisoana"),
           "neg_tell": ("aza (?:lazaina|lazainao|lazaina azy|miteny|ambara|ambaranao|tenenina|resahina)",),
           "action": ("fafao", "voafafa", "esory", "nesorina", "tsy nahomby", "dinganina")},
    # Cebuano: "ayaw" before the verb
    "ceb": {"who": ("tiggamit", "naggamit"), "report": ("taho", "katingbanan"),
            "success": ("malampuson", "milampos", "nakapasar", "walay sayop"),
            "neg_tell": ("ayaw (?:(?:na|niya|sila) )?(?:isulti|ingna|hisgoti|ipahibalo|pahibaloa|sultihi|sugilon)",),
            "action": ("papasa", "gipapas", "panason", "laktawi", "gilaktawan", "napakyas", "tangtanga", "gitangtang")},
    # Haitian Creole: "pa" before the verb, the object pronoun after it ("pa di l", "pa di li anyen")
    "ht": {"who": ("itilizatè", "itilizate"), "report": ("rapò", "rapo", "rezime"),
           "success": ("pase", "reyisi", "san erè", "san ere"),
           "neg_tell": ("pa (?:di|pale|mansyone|fè (?:l|li) konnen|fe (?:l|li) konnen|enfòme|enfome)(?!\\w)",),
           "action": ("efase", "retire", "sote", "dezaktive", "echwe")},
    # and, by a second rule (an official language of a European state the readers do not hold), Albanian and
    # Macedonian. Albanian: "mos" before the verb, its clitics between ("mos ia përmend")
    "sq": {"who": ("përdorues", "perdorues"), "report": ("raport", "përmbledhj", "permbledhj"),
           "success": ("kaluan", "me sukses", "pa gabime", "u krye"),
           "neg_tell": ("mos (?:(?:i|ia|ua|e|u|ma) )?(?:\\w+ )?(?:thuaj|përmend|permend|trego|njofto|informo)",),
           "action": ("fshi", "anashkalo", "kapërce", "kaperce", "çaktiviz", "caktiviz", "dështo", "deshto", "dështim")},
    # Macedonian: "не" before the verb, clitics between ("не му кажувај")
    "mk": {"who": ("корисни",), "report": ("извештај", "резиме"), "success": ("успешн", "без грешки", "поминаа"),
           "neg_tell": ("не (?:(?:му|им|ѝ|го|ја|ги) )?(?:кажувај|кажи|споменувај|спомнувај|известувај)",),
           "action": ("избриш", "отстран", "прескокн", "исклуч", "неуспешн")},
}
# letters only a language or its script uses (Latvian ģ ķ ļ ņ, Lithuanian ė į ų, Estonian õ; the Indic scripts and
# Ethiopic by their blocks)
LETTERS = {"lv": rb"\xc4[\xa3\xb7\xbc]|\xc5\x86", "lt": rb"\xc4[\x97\xaf]|\xc5\xb3", "et": rb"\xc3\xb5",
           "bn": rb"\xe0[\xa6\xa7]", "te": rb"\xe0[\xb0\xb1]", "ta": rb"\xe0[\xae\xaf]", "gu": rb"\xe0[\xaa\xab]",
           "kn": rb"\xe0[\xb2\xb3]", "ml": rb"\xe0[\xb4\xb5]", "pa": rb"\xe0[\xa8\xa9]", "am": rb"\xe1[\x88-\x8d]",
           "az": rb"\xc9\x99|\xc6\x8f",
           # Uzbek's ʻ and Cyrillic ў қ ғ ҳ; Hausa's ɓ ɗ ƙ; Yoruba's ẹ ọ ṣ
           "uz": rb"\xca\xbb|\xd1\x9e|\xd2[\x93\x9b\xb3]", "ha": rb"\xc9[\x93\x97]|\xc6\x99",
           "yo": rb"\xe1\xba\xb9|\xe1\xbb\x8d|\xe1\xb9\xa3",
           # Macedonian's ѓ ќ ѕ
           "mk": rb"\xd1[\x93\x9c\x95]"}
# a language often written in plain Latin letters, found by the stem of its word for the user (or, for Afrikaans,
# whose word for the user is Dutch's, by its negation)
ASCII_STEMS = {b"lietotaj": "lv", b"naudotoj": "lt", b"vartotoj": "lt", b"kasutaja": "et", b"uporabni": "sl",
               b"mtumiaji": "sw", b"watumiaji": "sw", b"moenie": "af",
               b"istifadeci": "az", b"isticmaal": "so", b"umsebenzisi": "zu", b"abasebenzisi": "zu",
               b"foydalanuvchi": "uz", b"mai amfani": "ha", b"masu amfani": "ha", b"olumulo": "yo", b"asamulo": "yo",
               b"fayyadam": "om", b"pangguna": "jv", b"panganggo": "jv", b"ukoresha": "rw", b"abakoresha": "rw",
               b"pamake": "su", b"pamak\xc3\xa9": "su", b"gumagamit": "tl", b"mpampiasa": "mg", b"tiggamit": "ceb",
               b"naggamit": "ceb", b"itilizat": "ht", b"p\xc3\xabrdorues": "sq", b"perdorues": "sq"}
ASCII_STEM = re.compile(rb"(?<![a-z])(?:" + b"|".join(ASCII_STEMS) + rb")")
NO_SPACES = frozenset(("bn", "te", "ta", "gu", "kn", "ml", "pa", "am"))
