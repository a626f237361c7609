;;; eglot_action.el --- Emacs eglot as a user sets it up: run one ollie code action, wait for its answer.  -*- lexical-binding: t -*-
;; Run by tests/editors/test_eglot.py: emacs --batch -l this-file, in the workspace. OLLIE_TEST_ACTION is the
;; action's title (or OLLIE_TEST_PROMPT a prompt sent by README's `ollie-ask', OLLIE_TEST_ELISP), OLLIE_TEST_UNTIL a
;; piece of the message that ends the wait; what the user types to a question is on stdin (batch Emacs reads the
;; minibuffer there). eglot waits for workspace/executeCommand with Emacs frozen and fails it after
;; `jsonrpc-default-request-timeout' (10 s): kept as it is.
(load (expand-file-name "eglot_setup.el" (file-name-directory load-file-name)))
(when (getenv "OLLIE_TEST_ELISP") (eval (car (read-from-string (getenv "OLLIE_TEST_ELISP"))) t))
(defvar ollie-test-messages nil "The messages eglot showed, newest first.")
(advice-add 'eglot--message :before (lambda (format &rest args) (push (apply #'format format args) ollie-test-messages)))
(defvar ollie-test-questions nil "The questions eglot put in the minibuffer, newest first: prompt and choices.")
(advice-add 'completing-read :before
            (lambda (prompt choices &rest _) (push `((prompt . ,prompt) (choices . ,(vconcat choices))) ollie-test-questions)))
(defun ollie-test-run-action (server times)
  "Run the action on SERVER; wait until OLLIE_TEST_UNTIL has shown TIMES times in all. Its answer and the wait."
  (let* ((prompt (getenv "OLLIE_TEST_PROMPT"))
         (actions (unless prompt (eglot-code-actions (point-min) (point-max) "refactor")))
         (action (seq-find (lambda (a) (equal (plist-get a :title) (getenv "OLLIE_TEST_ACTION"))) actions))
         (command (plist-get action :command))
         (started (float-time))
         (answer (condition-case e
                     (json-encode (if prompt
                                      (ollie-ask prompt)  ; README's command (OLLIE_TEST_ELISP), as a user's own
                                    (eglot-execute-command server (plist-get command :command)
                                                           (plist-get command :arguments))))
                   (error (format "%S" e))))
         (waited (- (float-time) started)))
    ;; The turn's questions, edits and answer come afterwards: wait for the answer, a minute at most.
    (while (and (< (seq-count (lambda (m) (string-search (getenv "OLLIE_TEST_UNTIL") m)) ollie-test-messages) times)
                (< (- (float-time) started) 60))
      (accept-process-output nil 1))
    (list answer waited)))
(condition-case err
    (let* ((server (ollie-test-connect))
           (run (ollie-test-run-action server 1)))
      (when (getenv "OLLIE_TEST_RECONNECT")  ; M-x eglot-reconnect: a new daemon, the action again
        (eglot-reconnect server)
        (setq run (ollie-test-run-action (eglot-current-server) 2)))
      (ollie-test-finish `((answer . ,(nth 0 run))
                           (waited . ,(nth 1 run))
                           (messages . ,(vconcat (reverse ollie-test-messages)))
                           (questions . ,(vconcat (reverse ollie-test-questions)))
                           (buffer . ,(buffer-substring-no-properties (point-min) (point-max))))))
  (error (ollie-test-finish `((failure . ,(format "%S" err))))))
