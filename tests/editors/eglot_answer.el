;;; eglot_answer.el --- eglot as Emacs 29 ships it opens a long answer (window/showDocument); what the file did.  -*- lexical-binding: t -*-
;; Run by tests/editors/test_eglot.py: emacs --batch -l this-file, in the workspace. Emacs 28's eglot (1.9) has no
;; window/showDocument: the capability and its handler are those of eglot 1.12 and later (Emacs 29's), which opens
;; the file with `find-file-noselect', so Emacs applies what the file's text asks of it (its mode, local variables).
(load (expand-file-name "eglot_setup.el" (file-name-directory load-file-name)))
(cl-defmethod eglot-client-capabilities :around (server)
  (append (cl-call-next-method server) '(:window (:showDocument (:support t)))))
(defvar ollie-test-answer nil "The buffer of the answer eglot was asked to show.")
(cl-defmethod eglot-handle-request (_server (_method (eql window/showDocument)) &key uri &allow-other-keys)
  (setq ollie-test-answer (find-file-noselect (eglot--uri-to-path uri)))
  (pop-to-buffer ollie-test-answer)
  '(:success t))
(condition-case err
    (let* ((server (ollie-test-connect))
           (actions (eglot-code-actions (point-min) (point-max) "refactor"))
           (action (seq-find (lambda (a) (equal (plist-get a :title) "Ollie: Explain")) actions))
           (command (plist-get action :command))
           (started (float-time)))
      (eglot-execute-command server (plist-get command :command) (plist-get command :arguments))
      (while (and (not ollie-test-answer) (< (- (float-time) started) 60))
        (accept-process-output nil 1))
      (with-current-buffer (or ollie-test-answer (error "no answer was shown"))
        (ollie-test-finish `((mode . ,(symbol-name major-mode))
                             (server . ,(if (bound-and-true-p server-process) t :json-false))
                             (text . ,(buffer-substring-no-properties (point-min) (point-max)))))))
  (error (ollie-test-finish `((failure . ,(format "%S" err))))))
