//! What sep does when it is told to stop (SIGINT, SIGTERM, SIGHUP): the partial output file,
//! if one is being written, is removed, and sep exits with the conventional status, 128 plus
//! the signal's number. SIGKILL cannot be caught: it leaves the partial file, named
//! `.NAME.XXXXXX.sep-partial` beside the output NAME, which is safe to delete.
//!
//! Input files and archives are read through memory maps; one that another process truncates
//! meanwhile faults (SIGBUS) where the map outlives the file. That fault is caught too: sep
//! says which file changed, removes the partial output and exits with status 1.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The partial output being written, if any.
static PARTIAL: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Starts the thread that waits for the signals.
pub fn watch() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // Held until the exit, so that no output is committed or begun meanwhile.
            let partial = PARTIAL.lock();
            if let Ok(Some(path)) = partial.as_deref() {
                let _ = std::fs::remove_file(path);
            }
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

/// Runs `f`, which creates or commits the partial output, while no signal is acted on; the
/// path it returns is the partial output from then on (`None`: no file is partial).
pub fn guarded<T>(f: impl FnOnce() -> (T, Option<PathBuf>)) -> T {
    let mut partial = PARTIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (done, path) = f();
    // The fault handler's copy, a C string it can unlink without allocating (never freed:
    // one per output file).
    let c_path = path
        .as_ref()
        .and_then(|p| CString::new(p.as_os_str().as_encoded_bytes()).ok())
        .map_or(std::ptr::null_mut(), |c| c.into_raw());
    FAULT_PARTIAL.store(c_path, Ordering::SeqCst);
    *partial = path;
    done
}

/// The partial output as the fault handler removes it (null: none).
static FAULT_PARTIAL: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
/// The message the fault handler writes: which mapped file changed.
static FAULT_MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static FAULT_MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

/// Records `name` as the mapped file a fault would come from, and installs the handler.
pub fn mapping(name: &str) {
    let message = format!("sep: error: {name}: the file changed while it was being read\n");
    let message = Box::leak(message.into_boxed_str());
    FAULT_MESSAGE_LEN.store(0, Ordering::SeqCst);
    FAULT_MESSAGE.store(message.as_ptr().cast_mut(), Ordering::SeqCst);
    FAULT_MESSAGE_LEN.store(message.len(), Ordering::SeqCst);
    // SAFETY: `on_fault` only calls async-signal-safe functions (write, unlink, _exit) on
    // memory that stays valid (leaked strings), and the zeroed sigaction is a valid one.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fault as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

/// The SIGBUS handler: reports the changed file, removes the partial output, exits 1.
extern "C" fn on_fault(_: libc::c_int) {
    let (message, len) = (
        FAULT_MESSAGE.load(Ordering::SeqCst),
        FAULT_MESSAGE_LEN.load(Ordering::SeqCst),
    );
    let partial = FAULT_PARTIAL.load(Ordering::SeqCst);
    // SAFETY: the pointers are null or point at leaked strings of those lengths; write, unlink
    // and _exit may be called from a signal handler.
    unsafe {
        if !message.is_null() {
            libc::write(2, message.cast(), len);
        }
        if !partial.is_null() {
            libc::unlink(partial);
        }
        libc::_exit(1);
    }
}
