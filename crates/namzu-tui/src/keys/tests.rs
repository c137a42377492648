use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn every_context_dispatches_its_own_keys() {
    assert_eq!(command_for(Context::List, key(KeyCode::Char('S'))), Some(Suspend));
    assert_eq!(command_for(Context::List, key(KeyCode::Char('s'))), Some(Shell));
    assert_eq!(command_for(Context::List, key(KeyCode::Char('f'))), Some(Forward));
    assert_eq!(command_for(Context::List, key(KeyCode::Char('x'))), None);
    assert_eq!(
        command_for(Context::List, KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)),
        Some(Refresh)
    );
    assert_eq!(command_for(Context::Confirm, key(KeyCode::Char('t'))), Some(TakeOver));
    assert_eq!(
        command_for(Context::ConfirmTyped, key(KeyCode::Char('t'))),
        None,
        "t is typed"
    );
    assert_eq!(command_for(Context::Scrolling, key(KeyCode::Char('q'))), Some(Close));
}

#[test]
fn no_key_means_two_things_in_one_context() {
    for context in [
        Context::List,
        Context::Filtering,
        Context::Confirm,
        Context::ConfirmTyped,
        Context::Scrolling,
        Context::Yaml,
        Context::HelpPopup,
        Context::Picker,
        Context::Logs,
        Context::LogSearch,
        Context::Command,
        Context::Leaks,
        Context::Pulse,
    ] {
        let keys: Vec<Key> = bindings(context)
            .iter()
            .flat_map(|b| b.keys.iter().map(|k| k.0))
            .collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(!keys[i + 1..].contains(k), "{context:?}: {k:?} bound twice");
        }
    }
}

#[test]
fn the_footer_keeps_help_and_quit_and_never_cuts_a_hint() {
    let wide = footer(Context::List, 400, true);
    assert!(
        wide.starts_with("↑↓ move") && wide.contains("S suspend · R resume · D delete"),
        "{wide}"
    );
    assert!(
        wide.contains("c contexts") && !footer(Context::List, 400, false).contains("c contexts"),
        "the picker's hint only across contexts: {wide}"
    );
    for width in [20, 40, 80, 120] {
        let f = footer(Context::List, width, true);
        assert!(f.chars().count() <= width, "{width}: {f}");
        assert!(f.contains("? help") && f.contains("q quit"), "{width}: {f}");
        for part in f.split(" · ") {
            assert!(wide.contains(part), "{width}: {part:?} is cut");
        }
    }
}
